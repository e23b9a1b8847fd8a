import { LABEL } from "../api/constants.ts";
import { computeHash } from "./hash.ts";
import type { Container, Pod, Volume } from "./kube-types.ts";
import { ANNOTATION, buildChildMeta, buildChildNames, buildLabelValue, COMPONENT, NETWORK_NONE, type RunRef } from "./names.ts";
import { buildContainerSecurityContext, buildPodSecurityContext, buildTmpVolume, SIDECAR_MEMORY_ENV, type PodSettings } from "./pod-settings.ts";
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
  runPolicy: "/etc/leviath/policy",
  serviceAccount: "/var/run/secrets/kubernetes.io/serviceaccount",
  tmp: "/tmp",
  /** The runtime token (an in-memory emptyDir only the agent and sidecar containers mount, never a sandbox pod). */
  runtimeSecret: "/run/leviath",
} as const;

/** The runtime token's file, written by the sidecar at each start and read by the runtime. */
export const RUNTIME_TOKEN_FILE = `${ENGINE_PATHS.runtimeSecret}/runtime-token`;

const RESERVED = ["/tmp", "/etc/leviath", "/var/run/secrets", ENGINE_PATHS.runtimeSecret, "/proc", "/sys", "/dev"];

function collides(path: string, taken: string[]): boolean {
  return taken.some((t) => path === t || path.startsWith(`${t}/`) || t.startsWith(`${path}/`));
}

function withSpecHash(pod: Pod): Pod {
  pod.metadata.annotations = { ...pod.metadata.annotations, [ANNOTATION.specHash]: computeHash(pod.spec) };
  return pod;
}

function mountVolumes(prefix: string, mounts: readonly PolicyMount[], taken: string[]): { volumes: Volume[]; volumeMounts: Container["volumeMounts"] } {
  const usable = mounts.filter((m) => m.volume !== undefined && !collides(m.path, taken));
  return {
    volumes: usable.map((m, i) => ({ ...(m.volume as Record<string, unknown>), name: `${prefix}-${i}` })),
    volumeMounts: usable.map((m, i) => ({ name: `${prefix}-${i}`, mountPath: m.path, readOnly: m.readOnly })),
  };
}

/** The projected service-account token only the sidecar sees (it needs pods/exec); the agent container gets none. */
function buildTokenVolume(): Volume {
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

const podSpecBase = (uid: number) => ({
  restartPolicy: "Never" as const,
  automountServiceAccountToken: false as const,
  enableServiceLinks: false as const,
  hostNetwork: false as const,
  hostPID: false as const,
  hostIPC: false as const,
  securityContext: buildPodSecurityContext(uid),
});

/**
 * The engine pod: the agent runtime container (no token, no granted read paths) and the `leviath sidecar`
 * container, which alone holds the service-account token, the run policy and the granted read-path volumes.
 */
export function buildEnginePod(run: RunRef, snapshot: RunSnapshot, workspace: WorkspaceMount, settings: PodSettings): Pod {
  const names = buildChildNames(run.name);
  const agent = snapshot.controller.agent.name;
  const readPaths = mountVolumes("read-path", snapshot.controller.readPathVolumes, [...RESERVED, workspace.mountPath]);
  const env = [
    { name: "LEVIATH_RUN", value: run.name },
    { name: "LEVIATH_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
    { name: "HOME", value: ENGINE_PATHS.tmp },
  ];
  const workspaceMount = { name: "workspace", mountPath: workspace.mountPath };
  const agentContainer: Container = {
    name: "agent",
    image: snapshot.controller.agent.image,
    workingDir: workspace.mountPath,
    env: [
      ...env,
      { name: "LEVIATH_SIDECAR_URL", value: `http://127.0.0.1:${settings.sidecarPort}` },
      { name: "LEVIATH_RUNTIME_CONFIG", value: `${ENGINE_PATHS.runtimeConfig}/${SNAPSHOT_KEY.runtime}` },
      { name: "LEVIATH_SIDECAR_TOKEN_FILE", value: RUNTIME_TOKEN_FILE },
    ],
    securityContext: buildContainerSecurityContext(),
    resources: settings.resources.agent,
    volumeMounts: [
      workspaceMount, { name: "agent-tmp", mountPath: ENGINE_PATHS.tmp }, { name: "runtime-config", mountPath: ENGINE_PATHS.runtimeConfig, readOnly: true },
      { name: "runtime-secret", mountPath: ENGINE_PATHS.runtimeSecret, readOnly: true },
    ],
  };
  const sidecar: Container = {
    name: "sidecar",
    image: settings.sidecarImage,
    command: ["leviath", "sidecar"],
    args: [
      "--run-policy", `${ENGINE_PATHS.runPolicy}/${SNAPSHOT_KEY.runPolicy}`,
      "--workdir", workspace.mountPath,
      "--listen", `127.0.0.1:${settings.sidecarPort}`,
      "--metrics-listen", `0.0.0.0:${settings.sidecarMetricsPort}`,
      "--run", run.name,
      "--runtime-token-file", RUNTIME_TOKEN_FILE,
    ],
    ports: [{ name: "metrics", containerPort: settings.sidecarMetricsPort, protocol: "TCP" }],
    env: [...env, ...Object.entries(SIDECAR_MEMORY_ENV).map(([name, value]) => ({ name, value }))],
    securityContext: buildContainerSecurityContext(),
    resources: settings.resources.sidecar,
    volumeMounts: [
      workspaceMount,
      { name: "sidecar-tmp", mountPath: ENGINE_PATHS.tmp },
      { name: "runtime-secret", mountPath: ENGINE_PATHS.runtimeSecret },
      { name: "run-policy", mountPath: ENGINE_PATHS.runPolicy, readOnly: true },
      { name: "kube-api-access", mountPath: ENGINE_PATHS.serviceAccount, readOnly: true },
      ...readPaths.volumeMounts,
    ],
  };
  return withSpecHash({
    apiVersion: "v1",
    kind: "Pod",
    metadata: buildChildMeta(run, agent, names.enginePod, COMPONENT.engine),
    spec: {
      ...podSpecBase(settings.runAsUser),
      serviceAccountName: names.serviceAccount,
      containers: [agentContainer, sidecar],
      volumes: [
        { name: "workspace", persistentVolumeClaim: { claimName: workspace.claimName } },
        buildTmpVolume("agent-tmp", settings.tmpSizeLimit),
        buildTmpVolume("sidecar-tmp", settings.tmpSizeLimit),
        { name: "runtime-secret", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
        { name: "runtime-config", configMap: { name: names.configMap, items: [{ key: SNAPSHOT_KEY.runtime, path: SNAPSHOT_KEY.runtime }] } },
        { name: "run-policy", configMap: { name: names.configMap, items: [{ key: SNAPSHOT_KEY.runPolicy, path: SNAPSHOT_KEY.runPolicy }] } },
        buildTokenVolume(),
        ...readPaths.volumes,
      ],
    },
  });
}

/**
 * One warm sandbox pod: the resolved image sleeping until the sidecar execs commands into it, with no credentials,
 * no token, the workspace at the run's path, and only the admin-declared volumes its stages may mount.
 */
export function buildSandboxPod(run: RunRef, agent: string, plan: SandboxPlan, mounts: readonly PolicyMount[], workspace: WorkspaceMount, settings: PodSettings): Pod {
  const wanted = mounts.filter((m) => plan.mounts.includes(m.path));
  const extra = mountVolumes("mount", wanted, [...RESERVED, workspace.mountPath]);
  const labels: Record<string, string> = { [LABEL.sandboxSignature]: plan.signature };
  if (!plan.network) labels[LABEL.network] = NETWORK_NONE;
  const sameNode = workspace.sameNode
    ? {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [{
              labelSelector: { matchLabels: { [LABEL.run]: buildLabelValue(run.name), [LABEL.component]: COMPONENT.engine } },
              topologyKey: "kubernetes.io/hostname",
            }],
          },
        },
      }
    : {};
  return withSpecHash({
    apiVersion: "v1",
    kind: "Pod",
    metadata: buildChildMeta(run, agent, plan.pod, COMPONENT.sandbox, labels),
    spec: {
      ...podSpecBase(settings.runAsUser),
      ...(plan.runtimeClassName ? { runtimeClassName: plan.runtimeClassName } : {}),
      ...sameNode,
      containers: [{
        name: "sandbox",
        image: plan.image ?? "",
        command: ["sleep", "infinity"],
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
