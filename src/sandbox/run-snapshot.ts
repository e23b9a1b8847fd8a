import { z } from "zod";
import type { AgentSpec } from "../api/agent.ts";
import { buildAgentKey, CredentialsSchema, VerbatimSchema, type Credential } from "../api/common.ts";
import { EMPTY_POLICY, PolicyMountSchema, type LeviathPolicySpec } from "../api/leviath-policy.ts";
import { RuntimeTemplateSchema } from "../api/runtime-templates.ts";
import { WorkspaceSchema, type RunSpec } from "../api/run.ts";
import { REASON } from "../api/status.ts";
import { REFERENCE_RUNTIME_KIND, RUNTIME_KINDS } from "../api/runtime-kinds.ts";
import { RUN_MODES, RunPolicySchema, type RunPolicy } from "../api/run-policy.ts";
import { buildRunPolicy } from "../policy/run-policy-merge.ts";
import { buildBlueprintSnapshotEntries, readBlueprintSnapshotEntries } from "./blueprint-files.ts";
import { computeReadPathVolumes } from "./read-path-volumes.ts";

/** Keys of the run's ConfigMap: what the sidecar reads, what the runtime reads, what the controller pins. */
export const SNAPSHOT_KEY = { runPolicy: "run-policy.json", runtime: "runtime.json", controller: "controller.json" } as const;

/** One MCP server's Secret as checked when the Run was pinned: mounted into the sidecar, or why not. */
export const McpSecretCheckSchema = z.strictObject({
  server: z.string().min(1),
  secretName: z.string().min(1),
  mounted: z.boolean(),
  reason: z.string().optional(),
  message: z.string().optional(),
});
/** One MCP server's Secret check. */
export type McpSecretCheck = z.infer<typeof McpSecretCheckSchema>;

/** What the controller pins at start besides the run policy: generations, image and the volumes backing mounts. */
export const ControllerSnapshotSchema = z.strictObject({
  version: z.literal(1),
  /** `runtimeKind`: absent in snapshots pinned before runtime kinds (the reference runtime); any other kind is started by `leviath adapter`. */
  agent: z.strictObject({ name: z.string().min(1), generation: z.number().int().min(0), image: z.string().min(1), runtimeKind: z.enum(RUNTIME_KINDS).optional() }),
  policy: z.strictObject({ name: z.string().min(1), generation: z.number().int().min(0).optional() }),
  sandboxMounts: z.array(PolicyMountSchema),
  readPathVolumes: z.array(PolicyMountSchema),
  /** The workspace as requested at start: a claim is immutable, so later edits of the Run do not move it. */
  workspace: WorkspaceSchema,
  /** The credential Secrets of the Agent and the Run (Run entries win on the same Secret), pinned at start. */
  credentials: CredentialsSchema.default([]),
  /** The MCP servers' Secrets (`secretRef`), checked once: only the `mounted` ones reach the sidecar container. */
  mcpSecrets: z.array(McpSecretCheckSchema).default([]),
});

/** What the agent runtime reads: the blueprint as written and the run's request. */
export const RuntimeSnapshotSchema = z.strictObject({
  agent: VerbatimSchema,
  run: z.strictObject({
    task: z.string().optional(),
    inputs: z.record(z.string(), z.string()).optional(),
    mode: z.enum(RUN_MODES),
    runtime: VerbatimSchema.optional(),
  }),
  /** Runtime kind mcp-command: the policy's template the Agent names, resolved and pinned at start (leviath adapter runs it). */
  template: RuntimeTemplateSchema.optional(),
  /**
   * With a base URL the Run picks (`runtime.providers.<name>.baseUrl`): the endpoints each credential Secret ties
   * (annotation leviath.dev/credential-endpoints), read when the Run was pinned. The runtime sends a key to such a
   * base URL only where every entry ties it; absent, it sends none there (policy/credential-endpoints.ts).
   */
  credentialEndpoints: z.array(z.strictObject({ secretName: z.string().min(1), endpoints: z.array(z.string()) })).optional(),
});

/** Everything a Run is pinned to, as stored in its immutable ConfigMap. */
export interface RunSnapshot {
  controller: z.infer<typeof ControllerSnapshotSchema>;
  runtime: z.infer<typeof RuntimeSnapshotSchema>;
  runPolicy: RunPolicy;
  /** The Agent's blueprint files (spec.blueprintFiles), copied at start: file name to text (blueprint-files.ts). */
  blueprintFiles?: Record<string, string>;
  /** SHA-256 of the ConfigMap data it was read from (controller/start-snapshot.ts), recorded in `status.snapshotSha256`. */
  sha256?: string;
}

/** The inputs of a fresh snapshot. */
export interface SnapshotInput {
  agent: { name: string; namespace: string; generation: number; spec: AgentSpec; written: Record<string, unknown> };
  policy: { name: string; generation?: number; spec: LeviathPolicySpec } | undefined;
  run: RunSpec;
  defaultRuntimeImage?: string;
  /** The Agent's blueprint files, already checked (blueprint-files.ts). */
  blueprintFiles?: Record<string, string>;
}

/** A snapshot, or why none can be made (a terminal condition of the Run). */
export type SnapshotResult = { ok: true; value: RunSnapshot } | { ok: false; reason: typeof REASON.noRuntimeImage; message: string };

/** The Agent's credentials, then the Run's; one entry per Secret, the Run's choice of `as` winning. */
export function mergeCredentials(agent: readonly Credential[], run: readonly Credential[]): Credential[] {
  const bySecret = new Map<string, Credential>();
  for (const c of [...agent, ...run]) bySecret.set(c.secretName, c);
  return [...bySecret.values()];
}

/** Resolve the run once: the run policy and everything else the Run's children are built from. */
export function buildRunSnapshot(input: SnapshotInput): SnapshotResult {
  const { agent, run } = input;
  const image = agent.spec.image ?? input.defaultRuntimeImage;
  if (!image) {
    return { ok: false, reason: REASON.noRuntimeImage, message: `Agent '${agent.name}' names no runtime image (spec.image) and the controller has no default` };
  }
  const policySpec = input.policy?.spec ?? EMPTY_POLICY;
  const runPolicy = buildRunPolicy(agent.spec, { key: buildAgentKey(agent.namespace, agent.name), name: agent.name }, policySpec, {
    mode: run.mode,
    allow: run.allowTools,
    agentGeneration: agent.generation,
    ...(input.policy?.generation !== undefined ? { policyGeneration: input.policy.generation } : {}),
  });
  return {
    ok: true,
    value: {
      runPolicy,
      ...(input.blueprintFiles ? { blueprintFiles: input.blueprintFiles } : {}),
      runtime: buildRuntimeSnapshot(input, policySpec),
      controller: buildControllerSnapshot(input, { image, runPolicy, policySpec }),
    },
  };
}

/** What the runtime reads: the Agent's spec as written and the Run's task, inputs and runtime settings. */
function buildRuntimeSnapshot(input: SnapshotInput, policySpec: LeviathPolicySpec): RunSnapshot["runtime"] {
  const { agent, run } = input;
  const named = agent.spec.runtime?.kind === "mcp-command" ? agent.spec.runtime.template : undefined;
  // Absent when the policy does not declare it: the ceiling has refused such a Run already, and the adapter fails closed.
  const template = named === undefined ? undefined : policySpec.runtimeTemplates.find((t) => t.name === named);
  return {
    ...(template ? { template } : {}),
    agent: agent.written,
    run: {
      mode: run.mode,
      ...(run.task !== undefined ? { task: run.task } : {}),
      ...(run.inputs ? { inputs: run.inputs } : {}),
      ...(run.runtime ? { runtime: run.runtime } : {}),
    },
  };
}

/** What the controller pins besides the run policy: the identities, the volumes its stages and grants mount, the credentials. */
function buildControllerSnapshot(input: SnapshotInput, resolved: { image: string; runPolicy: RunPolicy; policySpec: LeviathPolicySpec }): RunSnapshot["controller"] {
  const { agent, run } = input;
  const { runPolicy, policySpec } = resolved;
  const usedMounts = new Set(runPolicy.stages.flatMap((s) => (s.sandbox.kind === "none" ? [] : s.sandbox.mounts)));
  const grants = [...runPolicy.readPaths.granted, ...(runPolicy.readPaths.allowBlueprintReadPaths ? runPolicy.readPaths.declared : [])];
  return {
    version: 1,
    agent: {
      name: agent.name, generation: agent.generation, image: resolved.image,
      // Only a kind other than the reference runtime is pinned, so a Run of an unchanged Agent pins what it did before.
      ...(agent.spec.runtime && agent.spec.runtime.kind !== REFERENCE_RUNTIME_KIND ? { runtimeKind: agent.spec.runtime.kind } : {}),
    },
    policy: { name: input.policy?.name ?? "cluster", ...(input.policy?.generation !== undefined ? { generation: input.policy.generation } : {}) },
    sandboxMounts: (policySpec.sandbox?.mounts ?? []).filter((m) => usedMounts.has(m.path) && m.volume !== undefined),
    readPathVolumes: computeReadPathVolumes(policySpec.readPaths.volumes ?? [], grants),
    workspace: run.workspace,
    credentials: mergeCredentials(agent.spec.credentials ?? [], run.credentials ?? []),
    mcpSecrets: [],
  };
}

/** The ConfigMap data holding a snapshot (stable JSON, so the same snapshot is the same bytes). */
export function buildSnapshotData(snapshot: RunSnapshot): Record<string, string> {
  return {
    [SNAPSHOT_KEY.runPolicy]: `${JSON.stringify(snapshot.runPolicy, null, 2)}\n`,
    [SNAPSHOT_KEY.runtime]: `${JSON.stringify(snapshot.runtime, null, 2)}\n`,
    [SNAPSHOT_KEY.controller]: `${JSON.stringify(snapshot.controller, null, 2)}\n`,
    ...buildBlueprintSnapshotEntries(snapshot.blueprintFiles ?? {}),
  };
}

/** A snapshot's runtime and controller parts, without its run policy. */
export type SnapshotRuntimeParts = Pick<RunSnapshot, "runtime" | "controller">;

/** Read a snapshot back from ConfigMap data; an unreadable one is reported, never guessed at. */
export function parseSnapshotData(data: Record<string, string> | undefined): { ok: true; value: RunSnapshot } | { ok: false; message: string } {
  try {
    const runPolicy = RunPolicySchema.safeParse(JSON.parse(data?.[SNAPSHOT_KEY.runPolicy] ?? "null"));
    const parts = parseSnapshotRuntimeParts(data);
    if (!runPolicy.success) return { ok: false, message: `${SNAPSHOT_KEY.runPolicy}: ${runPolicy.error.issues[0]?.message ?? "invalid"}` };
    if (!parts.ok) return parts;
    const blueprintFiles = readBlueprintSnapshotEntries(data);
    const files = Object.keys(blueprintFiles).length > 0 ? { blueprintFiles } : {};
    return { ok: true, value: { runPolicy: runPolicy.data, ...parts.value, ...files } };
  } catch (err) {
    return { ok: false, message: `not JSON: ${(err as Error).message}` };
  }
}

/**
 * Read a snapshot's runtime.json and controller.json back, as {@link parseSnapshotData} does, without parsing its run
 * policy (the larger part): what a bound pool pod's hand-out needs, whose sidecar loads the run policy itself.
 */
export function parseSnapshotRuntimeParts(data: Readonly<Record<string, string>> | undefined): { ok: true; value: SnapshotRuntimeParts } | { ok: false; message: string } {
  try {
    const read = (key: string): unknown => JSON.parse(data?.[key] ?? "null");
    const runtime = RuntimeSnapshotSchema.safeParse(read(SNAPSHOT_KEY.runtime));
    const controller = ControllerSnapshotSchema.safeParse(read(SNAPSHOT_KEY.controller));
    if (!runtime.success) return { ok: false, message: `${SNAPSHOT_KEY.runtime}: ${runtime.error.issues[0]?.message ?? "invalid"}` };
    if (!controller.success) return { ok: false, message: `${SNAPSHOT_KEY.controller}: ${controller.error.issues[0]?.message ?? "invalid"}` };
    return { ok: true, value: { runtime: runtime.data, controller: controller.data } };
  } catch (err) {
    return { ok: false, message: `not JSON: ${(err as Error).message}` };
  }
}
