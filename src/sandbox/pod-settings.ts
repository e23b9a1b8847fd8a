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
  /** The uid/gid every container runs as (non-root, numeric, as Pod Security `restricted` needs). */
  runAsUser: number;
  resources: { agent: ContainerResources; sidecar: ContainerResources; sandbox: ContainerResources };
  /** Size limit of each writable `/tmp` emptyDir (the root filesystems are read-only). */
  tmpSizeLimit: string;
  /** The engine pod's grace period: the sidecar's bound to flush its audit and status once the agent exited. */
  engineGraceSeconds: number;
  /** The sandbox pods' grace period (they hold nothing to flush). */
  sandboxGraceSeconds: number;
}

/** Defaults: upstream's `--memory 2g` for sandboxes, plus the CPU and ephemeral-storage limits upstream lacks. */
export const DEFAULT_POD_SETTINGS: PodSettings = {
  sidecarImage: "ghcr.io/leviath/leviath-operator:0.1.0",
  sidecarPort: 7777,
  sidecarMetricsPort: 9090,
  runAsUser: 65532,
  resources: {
    agent: { requests: { cpu: "100m", memory: "256Mi" }, limits: { cpu: "2", memory: "2Gi", "ephemeral-storage": "1Gi" } },
    // 768Mi: the peak resident set under the worst call sequences is about 600 MiB (docs/benchmarks.md,
    // `npm run bench -- sidecar-memory`); at 256Mi a model could have the sidecar OOM-killed at will.
    sidecar: { requests: { cpu: "50m", memory: "64Mi" }, limits: { cpu: "1", memory: "768Mi", "ephemeral-storage": "256Mi" } },
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
