import { buildBlueprintVolumeItems } from "./blueprint-files.ts";
import { LABEL } from "../api/constants.ts";
import { REFERENCE_RUNTIME_KIND } from "../api/runtime-kinds.ts";
import { computeHash } from "./hash.ts";
import type { Credential } from "../api/common.ts";
import type { Container, Pod, Volume } from "./kube-types.ts";
import { ANNOTATION, buildChildMeta, buildChildNames, buildLabelValue, COMPONENT, NETWORK_NONE, type RunRef } from "./names.ts";
import { buildContainerSecurityContext, buildPodSecurityContext, buildTmpVolume, SIDECAR_MEMORY_ENV, type PodSettings } from "./pod-settings.ts";
import { SANDBOX_PID1_SCRIPT } from "./process-sweep.ts";
import type { PolicyMount } from "./read-path-volumes.ts";
import type { SandboxPlan } from "./sandbox-plan.ts";
import { SNAPSHOT_KEY, type RunSnapshot } from "./run-snapshot.ts";

/** Where a run works: the claim and the absolute path it is mounted at in every pod. */
export interface WorkspaceMount {
  claimName: string;
  mountPath: string;
  /** ReadWriteOnce claims need the sandbox pods on the engine pod's node. */
  sameNode: boolean;
}

/** Paths inside the engine pod's containers. */
export const ENGINE_PATHS = {
  runtimeConfig: "/etc/leviath/runtime",
  /** `files` credentials: `<credentials>/<secretName>/<key>`, in the agent container only. */
  credentials: "/var/run/leviath/credentials",
  runPolicy: "/etc/leviath/policy",
  /** The MCP servers' Secrets: `<mcpSecrets>/<secretName>/<key>`, in the sidecar container only. */
  mcpSecrets: "/var/run/leviath/mcp-secrets",
  /** The Agent's blueprint files pinned at start (blueprint-files.ts), in the sidecar container only. */
  blueprint: "/etc/leviath/blueprint",
  serviceAccount: "/var/run/secrets/kubernetes.io/serviceaccount",
  tmp: "/tmp",
  /**
   * The runtime token (an in-memory emptyDir only the agent and sidecar containers mount, never a sandbox pod).
   * Not under /run/leviath: /var/run is /run in Debian-based images, so credentials would be mounted inside it.
   */
  runtimeSecret: "/run/leviath-runtime",
} as const;

/** The runtime token's file, written by the sidecar at each start and read by the runtime. */
export const RUNTIME_TOKEN_FILE = `${ENGINE_PATHS.runtimeSecret}/runtime-token`;

/** runtime.json in the agent container (LEVIATH_RUNTIME_CONFIG): the snapshot's key mounted, or written there by `leviath bound-exec` in a pool pod. */
export const RUNTIME_CONFIG_FILE = `${ENGINE_PATHS.runtimeConfig}/${SNAPSHOT_KEY.runtime}`;

/** Paths no volume of an admin may be mounted over. */
export const RESERVED = ["/tmp", "/etc/leviath", "/var/run/secrets", "/var/run/leviath", "/run/leviath", ENGINE_PATHS.runtimeSecret, "/proc", "/sys", "/dev"];

/**
 * PID 1 of a sandbox pod: it sleeps until the sidecar execs commands in, sweeping every few seconds what ended
 * commands left (process-sweep.ts: the backstop no command can kill or stop). It handles no signal, so the
 * kubelet's stop waits out the pod's short grace period and ends it with SIGKILL. Only `sh` and `sleep`, which
 * the sandbox image needs anyway (commands run as `timeout ... sh -c`).
 */
export const SANDBOX_PID1 = ["sh", "-c", SANDBOX_PID1_SCRIPT] as const;

/** The agent container's view of the credential Secrets: env sources and file volumes (nothing for any other container). */
function buildCredentialMounts(credentials: readonly Credential[]): { envFrom: Record<string, unknown>[]; volumes: Volume[]; volumeMounts: NonNullable<Container["volumeMounts"]> } {
  const files = credentials.filter((c) => c.as === "files");
  return {
    envFrom: credentials.filter((c) => c.as === "env").map((c) => ({ secretRef: { name: c.secretName } })),
    // Group-readable only: the pod's fsGroup is the agent's uid, and no other container mounts these.
    volumes: files.map((c, i) => ({ name: `credential-${i}`, secret: { secretName: c.secretName, defaultMode: 0o440 } })),
    volumeMounts: files.map((c, i) => ({ name: `credential-${i}`, mountPath: `${ENGINE_PATHS.credentials}/${c.secretName}`, readOnly: true })),
  };
}

/**
 * The sidecar's view of the MCP servers' Secrets that passed the check at start (mcp-secrets.ts): one volume each,
 * group-readable (the pod's fsGroup) and mounted in the sidecar container alone. `optional`: a Secret deleted
 * since the check leaves its directory empty, so the sidecar finds no key and offers nothing from that server,
 * instead of the pod never starting.
 */
function buildMcpSecretMounts(snapshot: RunSnapshot): { volumes: Volume[]; volumeMounts: NonNullable<Container["volumeMounts"]>; args: string[] } {
  const secrets = [...new Set(snapshot.controller.mcpSecrets.filter((c) => c.mounted).map((c) => c.secretName))];
  return {
    volumes: secrets.map((name, i) => ({ name: `mcp-secret-${i}`, secret: { secretName: name, defaultMode: 0o440, optional: true } })),
    volumeMounts: secrets.map((name, i) => ({ name: `mcp-secret-${i}`, mountPath: `${ENGINE_PATHS.mcpSecrets}/${name}`, readOnly: true })),
    args: snapshot.runPolicy.mcpServers.some((s) => s.secretRef !== undefined) ? ["--mcp-secrets-dir", ENGINE_PATHS.mcpSecrets] : [],
  };
}

function collides(path: string, taken: string[]): boolean {
  return taken.some((t) => path === t || path.startsWith(`${t}/`) || t.startsWith(`${path}/`));
}

/** The pod with its spec hash annotated (pods are immutable: a different hash means delete and recreate). */
export function withSpecHash(pod: Pod): Pod {
  pod.metadata.annotations = { ...pod.metadata.annotations, [ANNOTATION.specHash]: computeHash(pod.spec) };
  return pod;
}

/** The admin volumes at their paths, read-only as declared, leaving out any that would lie over a taken path. */
export function mountVolumes(prefix: string, mounts: readonly PolicyMount[], taken: string[]): { volumes: Volume[]; volumeMounts: Container["volumeMounts"] } {
  const usable = mounts.filter((m) => m.volume !== undefined && !collides(m.path, taken));
  return {
    volumes: usable.map((m, i) => ({ ...(m.volume as Record<string, unknown>), name: `${prefix}-${i}` })),
    volumeMounts: usable.map((m, i) => ({ name: `${prefix}-${i}`, mountPath: m.path, readOnly: m.readOnly })),
  };
}

/** The projected service-account token only the sidecar sees (it needs pods/exec); the agent container gets none. */
export function buildTokenVolume(): Volume {
  return {
    name: "kube-api-access",
    projected: {
      defaultMode: 0o444,
      sources: [
        { serviceAccountToken: { path: "token", expirationSeconds: 3607 } },
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
        { downwardAPI: { items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }] } },
      ],
    },
  };
}

/** What every pod of the operator shares: no restart, no token automount, no host namespaces, the hardened security context. */
export const podSpecBase = (uid: number, graceSeconds: number) => ({
  restartPolicy: "Never" as const,
  terminationGracePeriodSeconds: graceSeconds,
  automountServiceAccountToken: false as const,
  enableServiceLinks: false as const,
  hostNetwork: false as const,
  hostPID: false as const,
  hostIPC: false as const,
  securityContext: buildPodSecurityContext(uid),
});

/**
 * The engine pod: the agent runtime container (no token, no granted read paths, the run's credentials) and the
 * `leviath sidecar`, which alone holds the service-account token, the run policy and the granted read-path
 * volumes. The sidecar is a native sidecar (an init container with `restartPolicy: Always`): it starts first,
 * and when the agent container exits the kubelet stops it (SIGTERM, then the pod's grace period to flush its
 * audit and status), so the pod, and with it the Run, completes.
 */
export function buildEnginePod(run: RunRef, snapshot: RunSnapshot, workspace: WorkspaceMount, settings: PodSettings): Pod {
  const names = buildChildNames(run.name);
  const agent = snapshot.controller.agent.name;
  const parts: EngineParts = {
    readPaths: mountVolumes("read-path", snapshot.controller.readPathVolumes, [...RESERVED, workspace.mountPath]),
    env: [
      { name: "LEVIATH_RUN", value: run.name },
      { name: "LEVIATH_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "HOME", value: ENGINE_PATHS.tmp },
    ],
    workspaceMount: { name: "workspace", mountPath: workspace.mountPath },
    credentials: buildCredentialMounts(snapshot.controller.credentials),
    mcpSecrets: buildMcpSecretMounts(snapshot),
    blueprint: buildBlueprintMount(names.configMap, snapshot.blueprintFiles),
  };
  const { readPaths, credentials, mcpSecrets, blueprint } = parts;
  const agentContainer = buildAgentContainer(snapshot, workspace, settings, parts);
  const sidecar = buildSidecarContainer(run, workspace, settings, parts);
  return withSpecHash({
    apiVersion: "v1",
    kind: "Pod",
    metadata: buildChildMeta(run, agent, { name: names.enginePod, component: COMPONENT.engine }),
    spec: {
      ...podSpecBase(settings.runAsUser, settings.engineGraceSeconds),
      serviceAccountName: names.serviceAccount,
      initContainers: [sidecar],
      containers: [agentContainer],
      volumes: [
        { name: "workspace", persistentVolumeClaim: { claimName: workspace.claimName } },
        buildTmpVolume("agent-tmp", settings.tmpSizeLimit),
        buildTmpVolume("sidecar-tmp", settings.tmpSizeLimit),
        { name: "runtime-secret", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
        { name: "runtime-config", configMap: { name: names.configMap, items: [{ key: SNAPSHOT_KEY.runtime, path: SNAPSHOT_KEY.runtime }] } },
        { name: "run-policy", configMap: { name: names.configMap, items: [{ key: SNAPSHOT_KEY.runPolicy, path: SNAPSHOT_KEY.runPolicy }] } },
        buildTokenVolume(),
        ...blueprint.volumes,
        ...readPaths.volumes,
        ...credentials.volumes,
        ...mcpSecrets.volumes,
      ],
    },
  });
}

/** What the engine pod's two containers share or split between them: env, the workspace, and the volumes each mounts. */
interface EngineParts {
  readonly readPaths: ReturnType<typeof mountVolumes>;
  readonly env: NonNullable<Container["env"]>;
  readonly workspaceMount: { name: string; mountPath: string };
  readonly credentials: ReturnType<typeof buildCredentialMounts>;
  readonly mcpSecrets: ReturnType<typeof buildMcpSecretMounts>;
  readonly blueprint: ReturnType<typeof buildBlueprintMount>;
}

/**
 * The command of an agent container whose Agent names a runtime kind other than the reference runtime: the
 * image's entrypoint is replaced by `leviath adapter <kind>` (the client image is built on the runtime base, so
 * `leviath` is on its PATH), which configures the client and starts it (docs/runtimes.md). The reference runtime
 * keeps the image's own entrypoint, as before.
 */
function buildAdapterCommand(snapshot: RunSnapshot): Pick<Container, "command" | "args"> {
  const kind = snapshot.controller.agent.runtimeKind;
  if (kind === undefined || kind === REFERENCE_RUNTIME_KIND) return {};
  return { command: ["leviath", "adapter", kind], args: ["--interaction-timeout-seconds", String(snapshot.runPolicy.limits.interactionTimeoutSeconds)] };
}

/** The agent runtime container: no token, no granted read paths, the run's credentials; the sidecar on loopback. */
function buildAgentContainer(snapshot: RunSnapshot, workspace: WorkspaceMount, settings: PodSettings, parts: EngineParts): Container {
  const { credentials } = parts;
  return {
    name: "agent",
    image: snapshot.controller.agent.image,
    ...buildAdapterCommand(snapshot),
    workingDir: workspace.mountPath,
    env: [
      ...parts.env,
      { name: "LEVIATH_SIDECAR_URL", value: `http://127.0.0.1:${settings.sidecarPort}` },
      { name: "LEVIATH_RUNTIME_CONFIG", value: RUNTIME_CONFIG_FILE },
      { name: "LEVIATH_SIDECAR_TOKEN_FILE", value: RUNTIME_TOKEN_FILE },
      ...buildRuntimeTracingEnv(settings),
    ],
    ...(credentials.envFrom.length > 0 ? { envFrom: credentials.envFrom } : {}),
    securityContext: buildContainerSecurityContext(),
    resources: settings.resources.agent,
    volumeMounts: [
      parts.workspaceMount, { name: "agent-tmp", mountPath: ENGINE_PATHS.tmp }, { name: "runtime-config", mountPath: ENGINE_PATHS.runtimeConfig, readOnly: true },
      { name: "runtime-secret", mountPath: ENGINE_PATHS.runtimeSecret, readOnly: true },
      ...credentials.volumeMounts,
    ],
  };
}

/**
 * The `leviath sidecar` native sidecar as every engine pod runs it (a pool pod's too): `head` flags, the loopback
 * API, the metrics listener when configured, the runtime token, the stop grace, then `tail` flags.
 */
export function buildSidecarBase(settings: PodSettings, flags: { head: string[]; tail: string[] }, env: NonNullable<Container["env"]>, volumeMounts: Container["volumeMounts"]): Container {
  // Only the digest: the pod spec is readable in the namespace, the token itself stays in the controller's Secret.
  const digest = settings.sidecarMetricsTokenSha256;
  const metricsArgs = digest ? ["--metrics-listen", `0.0.0.0:${settings.sidecarMetricsPort}`, "--metrics-token-sha256", digest] : [];
  const tracingArgs = settings.tracing ? ["--otlp-traces-endpoint", settings.tracing.endpoint, "--trace-content", settings.tracing.content] : [];
  return {
    name: "sidecar",
    image: settings.sidecarImage,
    restartPolicy: "Always",
    command: ["leviath", "sidecar"],
    args: [
      ...flags.head,
      "--listen", `127.0.0.1:${settings.sidecarPort}`,
      ...metricsArgs,
      ...tracingArgs,
      ...flags.tail,
    ],
    ...(digest ? { ports: [{ name: "metrics", containerPort: settings.sidecarMetricsPort, protocol: "TCP" }] } : {}),
    env: [...env, ...Object.entries(SIDECAR_MEMORY_ENV).map(([name, value]) => ({ name, value }))],
    securityContext: buildContainerSecurityContext(),
    resources: settings.resources.sidecar,
    volumeMounts,
  };
}

/**
 * The reference runtime's tracing environment (its `invoke_agent` and `chat` spans, and the traceparent it sends the
 * sidecar): OpenTelemetry's own variable for a traces endpoint, when the operator traces; nothing otherwise.
 */
export function buildRuntimeTracingEnv(settings: PodSettings): { name: string; value: string }[] {
  return settings.tracing ? [{ name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: settings.tracing.endpoint }] : [];
}

/** The flags that end every engine pod sidecar's command line: the runtime token and the stop grace. */
export function buildSidecarStopFlags(settings: PodSettings): string[] {
  return ["--runtime-token-file", RUNTIME_TOKEN_FILE, "--stop-grace-ms", String(Math.max(1, settings.engineGraceSeconds - 2) * 1000)];
}

/** The `leviath sidecar` native sidecar: the token, the run policy, the MCP Secrets, the blueprint files and the granted read paths. */
function buildSidecarContainer(run: RunRef, workspace: WorkspaceMount, settings: PodSettings, parts: EngineParts): Container {
  const { mcpSecrets, blueprint } = parts;
  const flags = {
    head: ["--run-policy", `${ENGINE_PATHS.runPolicy}/${SNAPSHOT_KEY.runPolicy}`, "--workdir", workspace.mountPath],
    tail: ["--run", run.name, ...buildSidecarStopFlags(settings), ...mcpSecrets.args, ...blueprint.args],
  };
  return buildSidecarBase(settings, flags, parts.env, [
    parts.workspaceMount,
    { name: "sidecar-tmp", mountPath: ENGINE_PATHS.tmp },
    { name: "runtime-secret", mountPath: ENGINE_PATHS.runtimeSecret },
    { name: "run-policy", mountPath: ENGINE_PATHS.runPolicy, readOnly: true },
    { name: "kube-api-access", mountPath: ENGINE_PATHS.serviceAccount, readOnly: true },
    ...mcpSecrets.volumeMounts,
    ...blueprint.volumeMounts,
    ...parts.readPaths.volumeMounts,
  ]);
}

/** The sidecar's blueprint directory: only the pinned `blueprint.*` keys of the run's snapshot, read-only. */
function buildBlueprintMount(configMap: string, files: Readonly<Record<string, string>> | undefined) {
  if (files === undefined || Object.keys(files).length === 0) return { args: [], volumeMounts: [], volumes: [] };
  return {
    args: ["--blueprint-dir", ENGINE_PATHS.blueprint],
    volumeMounts: [{ name: "blueprint-files", mountPath: ENGINE_PATHS.blueprint, readOnly: true }],
    volumes: [{ name: "blueprint-files", configMap: { name: configMap, items: buildBlueprintVolumeItems(files) } }],
  };
}

/**
 * Which engine pod a sandbox pod is scheduled beside (a ReadWriteOnce workspace): the Run's, or, for a Run served
 * from a warm pool (`pair`: the pool pod's name), the pool pod by its `pool-pair` label, which it carries from its
 * creation, so a pool's sandbox pod made before any Run and the one a Run makes for that pod are the same spec.
 */
function buildEngineSelector(run: RunRef, pair: string | undefined): Record<string, string> {
  const [key, value] = pair === undefined ? [LABEL.run, run.name] : [LABEL.poolPair, pair];
  return { [key]: buildLabelValue(value), [LABEL.component]: COMPONENT.engine };
}

/**
 * One warm sandbox pod: the resolved image sleeping ({@link SANDBOX_PID1}) until the sidecar execs commands into it, with no credentials,
 * no token, the workspace at the run's path, and only the admin-declared volumes its stages may mount. `pair`: the
 * warm pool pod the Run's engine is (docs/controller.md, "Warm sandbox pods").
 */
export function buildSandboxPod(run: RunRef, agent: string, plan: SandboxPlan, ctx: { mounts: readonly PolicyMount[]; workspace: WorkspaceMount; settings: PodSettings; pair?: string | undefined }): Pod {
  const { mounts, workspace, settings } = ctx;
  const wanted = mounts.filter((m) => plan.mounts.includes(m.path));
  const extra = mountVolumes("mount", wanted, [...RESERVED, workspace.mountPath]);
  const labels: Record<string, string> = { [LABEL.sandboxSignature]: plan.signature };
  if (!plan.network) labels[LABEL.network] = NETWORK_NONE;
  const sameNode = workspace.sameNode
    ? {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [{
              labelSelector: { matchLabels: buildEngineSelector(run, ctx.pair) },
              topologyKey: "kubernetes.io/hostname",
            }],
          },
        },
      }
    : {};
  return withSpecHash({
    apiVersion: "v1",
    kind: "Pod",
    metadata: buildChildMeta(run, agent, { name: plan.pod, component: COMPONENT.sandbox, labels }),
    spec: {
      // Nothing in a sandbox pod needs to shut down cleanly: a short grace bounds a PID 1 that a command replaced.
      ...podSpecBase(settings.runAsUser, settings.sandboxGraceSeconds),
      ...(plan.runtimeClassName ? { runtimeClassName: plan.runtimeClassName } : {}),
      ...sameNode,
      containers: [{
        name: "sandbox",
        image: plan.image ?? "",
        command: [...SANDBOX_PID1],
        workingDir: workspace.mountPath,
        env: [{ name: "HOME", value: "/tmp" }],
        securityContext: buildContainerSecurityContext(),
        resources: settings.resources.sandbox,
        volumeMounts: [{ name: "workspace", mountPath: workspace.mountPath }, { name: "tmp", mountPath: "/tmp" }, ...extra.volumeMounts],
      }],
      volumes: [
        { name: "workspace", persistentVolumeClaim: { claimName: workspace.claimName } },
        buildTmpVolume("tmp", settings.tmpSizeLimit),
        ...extra.volumes,
      ],
    },
  });
}
