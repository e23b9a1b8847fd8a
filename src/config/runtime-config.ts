// The runtime configuration the controller hands the engine pod (docs/runtime.md): runtime.json, the Agent's spec
// as written and the Run's task, inputs, mode and runtime values. Parsed here, once, with the schemas the
// controller wrote it with; an unreadable or invalid file is an error naming the field.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { AgentSpecSchema, type AgentSpec } from "../api/agent.ts";
import type { RuntimeTemplate } from "../api/runtime-templates.ts";
import type { CredentialEndpoints } from "../policy/credential-endpoints.ts";
import { RuntimeSnapshotSchema } from "../sandbox/run-snapshot.ts";

/** The Run's settings for one provider (`spec.runtime.providers.<name>`). */
export const ProviderConfigSchema = z.strictObject({
  protocol: z.enum(["anthropic", "openai"]).optional(),
  baseUrl: z.url().optional(),
  stream: z.boolean().optional(),
});

/** The Run's `runtime` keys `leviath agent` reads; any others are left alone (they may be another runtime's). */
export const AgentRuntimeValuesSchema = z.looseObject({
  model: z.string().min(1).optional(),
  providers: z.record(z.string().min(1), ProviderConfigSchema).optional(),
  maxContextChars: z.number().int().min(10_000).optional(),
});

/** What `leviath agent` runs. */
export interface AgentRuntimeConfig {
  readonly spec: AgentSpec;
  readonly task: string | undefined;
  readonly inputs: Record<string, string>;
  readonly mode: string;
  readonly runtime: z.infer<typeof AgentRuntimeValuesSchema>;
  /** Runtime kind mcp-command: the policy's template the Agent names, as pinned at the Run's start. */
  readonly template?: RuntimeTemplate;
  /** What each credential Secret ties, pinned with a base URL the Run picks (policy/credential-endpoints.ts). */
  readonly credentialEndpoints?: readonly CredentialEndpoints[];
}

function describe(error: z.ZodError, prefix: string): string {
  const issue = error.issues[0];
  return `${prefix}${issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""}${issue?.message ?? "invalid"}`;
}

/** Reads and checks runtime.json; the error says which file and which field. */
export function loadRuntimeConfig(path: string): { ok: true; value: AgentRuntimeConfig } | { ok: false; message: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    return { ok: false, message: `${path}: ${(err as Error).message}` };
  }
  const snapshot = RuntimeSnapshotSchema.safeParse(raw);
  if (!snapshot.success) return { ok: false, message: describe(snapshot.error, `${path}: `) };
  const spec = AgentSpecSchema.safeParse(snapshot.data.agent);
  if (!spec.success) return { ok: false, message: describe(spec.error, `${path}: agent.`) };
  const runtime = AgentRuntimeValuesSchema.safeParse(snapshot.data.run.runtime ?? {});
  if (!runtime.success) return { ok: false, message: describe(runtime.error, `${path}: run.runtime.`) };
  const run = snapshot.data.run;
  const { template, credentialEndpoints } = snapshot.data;
  return {
    ok: true,
    value: { spec: spec.data, task: run.task, inputs: run.inputs ?? {}, mode: run.mode, runtime: runtime.data, ...(template ? { template } : {}), ...(credentialEndpoints ? { credentialEndpoints } : {}) },
  };
}
