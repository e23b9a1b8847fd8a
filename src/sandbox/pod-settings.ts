/** Requests and limits of one container. */
export interface ContainerResources {
  requests: Record<string, string>;
  limits: Record<string, string>;
}

/** The operator's own pod settings (controller flags), applied to every Run. */
export interface PodSettings {
  /** Image of the `leviath sidecar` container (the operator's own image). */
  sidecarImage: string;
  /** Runtime image for Agents that name none; unset means such Runs fail. */
  defaultRuntimeImage?: string;
  /** The loopback port the sidecar listens on inside the engine pod. */
  sidecarPort: number;
  /** The port of the sidecar's separate metrics listener, scraped over the pod network. */
  sidecarMetricsPort: number;
  /**
   * The SHA-256 (hex) of the scrape token the sidecar's /metrics serves (the controller's Secret); unset means
   * engine pods serve no metrics at all, never unauthenticated ones.
   */
  sidecarMetricsTokenSha256?: string;
  /** The uid/gid every container runs as (non-root, numeric, as Pod Security `restricted` needs). */
  runAsUser: number;
  resources: { agent: ContainerResources; sidecar: ContainerResources; sandbox: ContainerResources };
  /** Size limit of each writable `/tmp` emptyDir (the root filesystems are read-only). */
  tmpSizeLimit: string;
  /** The engine pod's grace period: the sidecar's bound to flush its audit and status once the agent exited. */
  engineGraceSeconds: number;
  /** The sandbox pods' grace period (they hold nothing to flush). */
  sandboxGraceSeconds: number;
  /**
   * Where every Run's sidecar and reference runtime export their spans (OTLP/HTTP, `--otlp-traces-endpoint`), and up
   * to which sensitivity a tool call's arguments and result go with them; unset (the default): no tracing at all.
   */
  tracing?: { readonly endpoint: string; readonly content: "none" | "public" | "internal" | "private" };
}

/**
 * V8's limits for the sidecar container (its `NODE_OPTIONS`): a small young generation and an old space well
 * under the pod limit make V8 collect before the cgroup would kill the process; the sidecar's own budgets
 * (pending calls, remembered answers, reads, command output) keep what is live below them. One V8 worker thread
 * (`--v8-pool-size=1`, Node's default is four): the container has one CPU, so the other three only time-slice
 * with the thread they help; on a quiet machine, one core, 1,000 calls/s, the `http_post` p99.9 was 5.2 to 9.7 ms
 * against 9.5 to 17 ms with four (docs/benchmarks-history.md, "Fourth pass"). 2 MiB semi-spaces halved the
 * scavenges (a call allocates about 24 KiB) but raised the peak RSS by about 6 MiB, so they are not used. Only
 * flags Node accepts in `NODE_OPTIONS` can go here (it refuses to start otherwise; tested).
 */
export const SIDECAR_NODE_OPTIONS = "--max-old-space-size=128 --max-semi-space-size=1 --v8-pool-size=1";

/**
 * V8 flags NODE_OPTIONS refuses, which the sidecar sets on itself at start (`LEVIATH_SIDECAR_V8_FLAGS`,
 * src/cli/sidecar-v8-flags.ts): Maglev's finished compilation jobs freed on the main thread rather than queued for
 * the one worker, whose arena otherwise held 20 to 30 MiB of them at the peak (the `peers` run, docs/benchmarks.md).
 */
export const SIDECAR_V8_FLAGS = "--no-maglev-destroy-on-background";

/**
 * The sidecar container's environment for memory. Besides the V8 flags, glibc's mmap threshold is held at its
 * 128 KiB default: otherwise freeing one large buffer raises it, later file buffers come from the heap arena,
 * and freed memory stays resident (8 files of 1 MiB per `read_files`, 4 at once: 275 MiB peak, 212 with it).
 * The `sidecar-memory` bench runs the sidecar with this same environment; `LEVIATH_SIDECAR_V8_FLAGS` carries the V8
 * flags only the sidecar itself can set.
 */
export const SIDECAR_MEMORY_ENV: Readonly<Record<string, string>> = {
  NODE_OPTIONS: SIDECAR_NODE_OPTIONS,
  LEVIATH_SIDECAR_V8_FLAGS: SIDECAR_V8_FLAGS,
  MALLOC_MMAP_THRESHOLD_: "131072",
};

/** Defaults: upstream's `--memory 2g` for sandboxes, plus the CPU and ephemeral-storage limits upstream lacks. */
export const DEFAULT_POD_SETTINGS: PodSettings = {
  sidecarImage: "ghcr.io/leviath/leviath-operator:0.1.0",
  sidecarPort: 7777,
  sidecarMetricsPort: 9090,
  runAsUser: 65532,
  resources: {
    agent: { requests: { cpu: "100m", memory: "256Mi" }, limits: { cpu: "2", memory: "2Gi", "ephemeral-storage": "1Gi" } },
    // DESIGN.md §7: the sidecar's peak resident set under the worst call sequences stays below 256Mi (with
    // SIDECAR_MEMORY_ENV; docs/benchmarks.md, `npm run bench -- sidecar-memory`), refusing rather than growing.
    sidecar: { requests: { cpu: "50m", memory: "64Mi" }, limits: { cpu: "1", memory: "256Mi", "ephemeral-storage": "256Mi" } },
    sandbox: { requests: { cpu: "100m", memory: "256Mi" }, limits: { cpu: "2", memory: "2Gi", "ephemeral-storage": "1Gi" } },
  },
  tmpSizeLimit: "512Mi",
  engineGraceSeconds: 15,
  sandboxGraceSeconds: 1,
};

/** Pod-level security: non-root with a numeric uid, seccomp RuntimeDefault, group-owned volumes. */
export function buildPodSecurityContext(uid: number): Record<string, unknown> {
  return {
    runAsNonRoot: true,
    runAsUser: uid,
    runAsGroup: uid,
    fsGroup: uid,
    fsGroupChangePolicy: "OnRootMismatch",
    seccompProfile: { type: "RuntimeDefault" },
  };
}

/** Container-level security: every capability dropped, no escalation, read-only root filesystem. */
export function buildContainerSecurityContext(): Record<string, unknown> {
  return {
    allowPrivilegeEscalation: false,
    privileged: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  };
}

/** A writable scratch directory on a read-only root filesystem. */
export function buildTmpVolume(name: string, sizeLimit: string): { name: string; emptyDir: { sizeLimit: string } } {
  return { name, emptyDir: { sizeLimit } };
}
