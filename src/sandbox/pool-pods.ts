// A warm pool's pod (docs/controller.md, "Warm pools"): an engine pod started before any Run exists, with
// everything that belongs to a Run left out. No task (runtime.json), no run policy, no blueprint file, no
// credential, no MCP Secret, no Run's Role: a sidecar with no policy that refuses every call, a runtime that waits
// for its binding, and an identity that may read its own pod only. What a Run needs reaches it at bind time over
// the API and loopback, never through its spec (docs/security.md, "Warm pools").
import { API_VERSION, FIELD_MANAGER, KIND, LABEL } from "../api/constants.ts";
import { WORKSPACE_ROOT } from "../api/run.ts";
import { REFERENCE_RUNTIME_KIND } from "../api/runtime-kinds.ts";
import { computeHash } from "./hash.ts";
import type { Container, KubeObject, ObjectMeta, Pod } from "./kube-types.ts";
import { ANNOTATION, buildChildNames, buildLabelValue, buildOwnerReference, COMPONENT, type RunRef } from "./names.ts";
import { buildRole, buildRoleBinding } from "./run-objects.ts";
import { buildContainerSecurityContext, buildTmpVolume, type PodSettings } from "./pod-settings.ts";
import { buildRuntimeTracingEnv, buildSidecarBase, buildSidecarStopFlags, buildTokenVolume, ENGINE_PATHS, mountVolumes, podSpecBase, RESERVED, RUNTIME_TOKEN_FILE, withSpecHash } from "./pods.ts";
import type { PolicyMount } from "./read-path-volumes.ts";
import type { RunSnapshot } from "./run-snapshot.ts";
import type { RunPolicy } from "../api/run-policy.ts";
import type { RuntimeStart } from "../api/pools.ts";

/** Values of `leviath.dev/pool-state`. */
export const POOL_STATE = { ready: "ready", bound: "bound" } as const;

/** The workspace every pool pod's claim is made with: the Run's default workspace (a Run asking for another never matches). */
export const POOL_WORKSPACE = { mountPath: WORKSPACE_ROOT, size: "1Gi", accessMode: "ReadWriteOnce" } as const;

/**
 * Where `leviath bound-exec` writes the binding, at the paths a cold engine pod mounts them (runtime.json, the
 * `files` credentials): in-memory volumes of the agent container alone, empty until the pod is bound. The
 * credentials' room holds the most a Run may name (16 Secrets of at most 1 MiB each).
 */
const BOUND_VOLUMES = [
  { name: "bound-runtime", mountPath: ENGINE_PATHS.runtimeConfig, sizeLimit: "2Mi" },
  { name: "bound-credentials", mountPath: ENGINE_PATHS.credentials, sizeLimit: "16Mi" },
] as const;

/** The Agent a pool serves, as its pods refer to it (the owner of every pool object until a Run adopts it). */
export interface PoolAgent {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** What a pool's pods are made from; its hash is the pool's `leviath.dev/pool-hash`. */
export interface PoolTemplate {
  readonly agent: PoolAgent;
  /** The Agent's runtime image (its spec.image, else the controller's --runtime-image). */
  readonly image: string;
  /** The Agent's runtime kind (undefined: the reference runtime). */
  readonly runtimeKind?: string | undefined;
  /** The policy's read-path volumes a grant of this Agent reaches (the same for every Run of it). */
  readonly readPathVolumes: readonly PolicyMount[];
  /** The pool's runtime command (spec.pools[].command), where the runtime kind's default is not the image's. */
  readonly command?: readonly string[] | undefined;
  /** When the runtime starts (spec.pools[].runtimeStart); undefined: {@link resolveRuntimeStart}'s default. */
  readonly runtimeStart?: RuntimeStart | undefined;
  /**
   * What a Run of the Agent would plan its sandbox pods from (its stages' sandboxes and the policy's sandbox
   * volumes): each pool pod gets its own sandbox pods from it. Not in the pool hash: a sandbox pod is compared by
   * its own spec hash.
   */
  readonly sandboxes?: { readonly runPolicy: RunPolicy; readonly mounts: readonly PolicyMount[] } | undefined;
}

/** The hash of a pool's template and the pod settings: equal means a pool pod may serve a Run of the pool's Agent today. */
export function computePoolHash(template: PoolTemplate, settings: PodSettings): string {
  const { agent, image, runtimeKind, readPathVolumes, command } = template;
  // `layout`: what a pool pod's metadata promises beyond its spec; 2: the `pool-pair` label its sandbox pods are
  // scheduled by (a pod made before it is retired, never adopted: a Run's sandbox pods could not find it).
  // `runtimeStart` only when the runtime starts with the pod: a pool whose runtime starts at its binding hashes as before.
  const start = resolveRuntimeStart(template);
  return computeHash({ agent: agent.uid, image, runtimeKind: runtimeKind ?? REFERENCE_RUNTIME_KIND, readPathVolumes, settings, layout: 2, ...(command ? { command } : {}), ...(start === "with-pod" ? { runtimeStart: start } : {}) });
}

/** The names of a pool pod's objects: the pod, its ServiceAccount, Role and RoleBinding (one name), its workspace claim. */
export function buildPoolNames(agent: string, id: string) {
  // An Agent name is at most 253 characters; a pod name may be too, and `-workspace` comes on top for the claim.
  const pod = `${agent.slice(0, 253 - 26)}-pool-${id}`;
  return { pod, identity: pod, workspace: `${pod}-workspace` };
}

/** The names of every object of a pool pod, given the pod's: itself, its identity (same name) and its claim. */
export function listPoolObjectNames(pod: string): string[] {
  return [pod, `${pod}-workspace`];
}

/**
 * A pool's template from a snapshot of its Agent and the pool's declaration: what a Run's pinned snapshot gives, so
 * equal hashes mean a pod can serve it.
 */
export function buildPoolTemplate(agent: PoolAgent, snapshot: RunSnapshot, pool: { readonly command?: readonly string[] | undefined; readonly runtimeStart?: RuntimeStart | undefined }): PoolTemplate {
  const { image, runtimeKind } = snapshot.controller.agent;
  return {
    agent, image, ...(runtimeKind !== undefined ? { runtimeKind } : {}), readPathVolumes: snapshot.controller.readPathVolumes, ...(pool.command ? { command: pool.command } : {}),
    ...(pool.runtimeStart ? { runtimeStart: pool.runtimeStart } : {}),
    sandboxes: { runPolicy: snapshot.runPolicy, mounts: snapshot.controller.sandboxMounts },
  };
}

/** Metadata of a pool object: in the Agent's namespace, owned by it (as controller) until a Run adopts it. */
export function buildPoolMeta(agent: PoolAgent, name: string, component: string): ObjectMeta {
  return {
    name,
    namespace: agent.namespace,
    labels: {
      [LABEL.pool]: buildLabelValue(agent.name),
      [LABEL.agent]: buildLabelValue(agent.name),
      [LABEL.component]: component,
      [LABEL.managedBy]: FIELD_MANAGER,
    },
    // No blockOwnerDeletion: that would need update on agents/finalizers, and nothing waits on an Agent's deletion.
    ownerReferences: [{ apiVersion: API_VERSION, kind: KIND.agent, name: agent.name, uid: agent.uid, controller: true }],
  };
}

/**
 * When a pool's runtime starts: as declared, else with the pod for the runtime kind's own command (ours read their
 * binding from LEVIATH_BINDING_FD: cli/dispatch.ts) and at the binding for a command the pool names (a runtime that may
 * not know the held binding).
 */
export function resolveRuntimeStart(template: Pick<PoolTemplate, "command" | "runtimeStart">): RuntimeStart {
  return template.runtimeStart ?? (template.command === undefined ? "with-pod" : "at-binding");
}

/**
 * The agent container's command: bound-exec, which waits for the binding, and the runtime: the pool's command, else
 * the runtime kind's (the reference runtime's entrypoint, or the adapter's), started after the binding or, held on
 * it, with the pod (`--held`).
 */
function buildBoundCommand(template: PoolTemplate): string[] {
  const { runtimeKind, command } = template;
  const entry = command ?? (runtimeKind === undefined || runtimeKind === REFERENCE_RUNTIME_KIND ? ["leviath", "agent"] : ["leviath", "adapter", runtimeKind]);
  return ["leviath", "bound-exec", ...(resolveRuntimeStart(template) === "with-pod" ? ["--held"] : []), "--", ...entry];
}

/** The pod's name, for the sidecar's watch of its own pod (the only object its identity may read before binding). */
const POD_NAME_ENV = { name: "LEVIATH_POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } };
const NAMESPACE_ENV = { name: "LEVIATH_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } };

function buildPoolAgentContainer(template: PoolTemplate, settings: PodSettings): Container {
  return {
    name: "agent",
    image: template.image,
    command: buildBoundCommand(template),
    workingDir: POOL_WORKSPACE.mountPath,
    env: [
      NAMESPACE_ENV,
      { name: "HOME", value: ENGINE_PATHS.tmp },
      { name: "LEVIATH_SIDECAR_URL", value: `http://127.0.0.1:${settings.sidecarPort}` },
      { name: "LEVIATH_SIDECAR_TOKEN_FILE", value: RUNTIME_TOKEN_FILE },
      // The collector the operator traces to, as a cold pod's runtime has it: nothing of a Run, and in the pool
      // hash (the pod settings are), so a changed endpoint retires the pool's pods.
      ...buildRuntimeTracingEnv(settings),
    ],
    securityContext: buildContainerSecurityContext(),
    resources: settings.resources.agent,
    volumeMounts: [
      { name: "workspace", mountPath: POOL_WORKSPACE.mountPath },
      { name: "agent-tmp", mountPath: ENGINE_PATHS.tmp },
      { name: "runtime-secret", mountPath: ENGINE_PATHS.runtimeSecret, readOnly: true },
      ...BOUND_VOLUMES.map((v) => ({ name: v.name, mountPath: v.mountPath })),
    ],
  };
}

function buildPoolSidecar(settings: PodSettings, readPaths: ReturnType<typeof mountVolumes>, sandboxPods: readonly string[]): Container {
  // Its own sandbox pods: the shell channel to each is opened while the pod waits for its binding.
  const head = ["--pool", "--workdir", POOL_WORKSPACE.mountPath, ...[...sandboxPods].sort().flatMap((p) => ["--sandbox-pod", p])];
  const flags = { head, tail: buildSidecarStopFlags(settings) };
  return buildSidecarBase(settings, flags, [POD_NAME_ENV, NAMESPACE_ENV], [
    { name: "workspace", mountPath: POOL_WORKSPACE.mountPath },
    { name: "sidecar-tmp", mountPath: ENGINE_PATHS.tmp },
    { name: "runtime-secret", mountPath: ENGINE_PATHS.runtimeSecret },
    { name: "kube-api-access", mountPath: ENGINE_PATHS.serviceAccount, readOnly: true },
    ...(readPaths.volumeMounts ?? []),
  ]);
}

/**
 * One pool pod, unbound: the engine pod's hardening and native sidecar, the pool's image and read-path volumes
 * (the sidecar's alone), its own identity and workspace claim, and nothing of any Run. `sandboxPods`: the sandbox
 * pods the pool makes for it (pool-sandbox-pods.ts), named to its sidecar, which opens its shell channels to them.
 */
export function buildPoolPod(template: PoolTemplate, id: string, settings: PodSettings, sandboxPods: readonly string[] = []): Pod {
  const names = buildPoolNames(template.agent.name, id);
  const readPaths = mountVolumes("read-path", template.readPathVolumes, [...RESERVED, POOL_WORKSPACE.mountPath]);
  const meta = buildPoolMeta(template.agent, names.pod, COMPONENT.engine);
  meta.labels = { ...meta.labels, [LABEL.poolState]: POOL_STATE.ready, [LABEL.poolPair]: buildLabelValue(names.pod) };
  meta.annotations = { [ANNOTATION.poolHash]: computePoolHash(template, settings) };
  return withSpecHash({
    apiVersion: "v1",
    kind: "Pod",
    metadata: meta,
    spec: {
      ...podSpecBase(settings.runAsUser, settings.engineGraceSeconds),
      serviceAccountName: names.identity,
      initContainers: [buildPoolSidecar(settings, readPaths, sandboxPods)],
      containers: [buildPoolAgentContainer(template, settings)],
      volumes: [
        { name: "workspace", persistentVolumeClaim: { claimName: names.workspace } },
        buildTmpVolume("agent-tmp", settings.tmpSizeLimit),
        buildTmpVolume("sidecar-tmp", settings.tmpSizeLimit),
        { name: "runtime-secret", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
        ...BOUND_VOLUMES.map((v) => ({ name: v.name, emptyDir: { medium: "Memory", sizeLimit: v.sizeLimit } })),
        buildTokenVolume(),
        ...readPaths.volumes,
      ],
    },
  });
}

/**
 * What a pool pod needs before it, in the order they are written: its ServiceAccount, a Role that lets it get
 * and watch exactly its own pod (to see its binding) and exec into exactly its own sandbox pods (`sandboxPods`, by
 * name: the shell channels its sidecar opens while it waits; those pods hold nothing of any Run), the RoleBinding,
 * and its workspace claim.
 */
export function buildPoolPodPrerequisites(agent: PoolAgent, id: string, sandboxPods: readonly string[] = []): KubeObject[] {
  const names = buildPoolNames(agent.name, id);
  const rbac = "rbac.authorization.k8s.io";
  const sandboxes = [...sandboxPods].sort();
  // A rule with no names would be every pod's: left out when the pool makes no sandbox pod.
  const exec = sandboxes.length === 0 ? [] : [
    { apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: sandboxes },
    { apiGroups: [""], resources: ["pods/exec"], verbs: ["create", "get"], resourceNames: sandboxes },
  ];
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: buildPoolMeta(agent, names.identity, COMPONENT.sidecarIdentity), automountServiceAccountToken: false },
    {
      apiVersion: `${rbac}/v1`, kind: "Role", metadata: buildPoolMeta(agent, names.identity, COMPONENT.sidecarIdentity),
      // watch by name: the sidecar's watch of its pod carries fieldSelector=metadata.name=<pod>, which RBAC checks
      // against resourceNames (a watch or list of the namespace's pods stays forbidden).
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "watch"], resourceNames: [names.pod] }, ...exec],
    },
    {
      apiVersion: `${rbac}/v1`, kind: "RoleBinding", metadata: buildPoolMeta(agent, names.identity, COMPONENT.sidecarIdentity),
      roleRef: { apiGroup: rbac, kind: "Role", name: names.identity },
      subjects: [{ kind: "ServiceAccount", name: names.identity, namespace: agent.namespace }],
    },
    {
      apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: buildPoolMeta(agent, names.workspace, COMPONENT.workspace),
      spec: { accessModes: [POOL_WORKSPACE.accessMode], resources: { requests: { storage: POOL_WORKSPACE.size } } },
    },
  ];
}

/**
 * The identity of a Run adopted into pool pod `pod`: the Run's own Role (as for a cold Run) plus `get` on exactly
 * its start snapshot and the credential Secrets that snapshot pins, which the pool pod's sidecar reads over the
 * API (a pod's volumes cannot change; it hands the credentials to the runtime once), bound to the pool pod's
 * ServiceAccount instead of `<run>-sidecar`.
 */
export function buildPoolRunIdentity(run: RunRef, snapshot: RunSnapshot, pod: string, execTargets: readonly string[]): KubeObject[] {
  const agent = snapshot.controller.agent.name;
  const role = buildRole(run, agent, execTargets) as KubeObject & { rules: Record<string, unknown>[] };
  role.rules.push({ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: [buildChildNames(run.name).configMap] });
  const secrets = snapshot.controller.credentials.map((c) => c.secretName);
  if (secrets.length > 0) role.rules.push({ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: secrets });
  const binding = buildRoleBinding(run, agent);
  binding["subjects"] = [{ kind: "ServiceAccount", name: pod, namespace: run.namespace }];
  return [role, binding];
}

/** The names of what a Run that adopted pool pod `pod` takes over with it: `Kind/name` of the pod, its claim and its identity. */
export function listAdoptedObjects(pod: string): { pod: string; claim: string; identity: string[] } {
  const [, claim] = listPoolObjectNames(pod);
  return { pod: `Pod/${pod}`, claim: `PersistentVolumeClaim/${claim}`, identity: ["ServiceAccount", "Role", "RoleBinding"].map((k) => `${k}/${pod}`) };
}

/**
 * A pool object as the Run that adopted its pod holds it: labelled with the Run (a pod also `pool-state: bound`), and
 * owned by the Run, as its controller, in place of the Agent; everything else as read. The pod's binding annotations
 * come later ({@link buildAnnouncedPod}), once everything they point its sidecar at is written.
 */
export function buildAdoptedObject<T extends KubeObject>(obj: T, run: RunRef): T {
  const isPod = obj.kind === "Pod";
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      labels: { ...obj.metadata.labels, [LABEL.run]: buildLabelValue(run.name), ...(isPod ? { [LABEL.poolState]: POOL_STATE.bound } : {}) },
      ownerReferences: [buildOwnerReference(run)],
    },
  };
}

/** Whether pool pod `pod` (as read) is annotated with Run `run`'s binding already. */
export function isAnnounced(pod: KubeObject, run: RunRef): boolean {
  const annotations = pod.metadata.annotations;
  return annotations?.[ANNOTATION.boundRun] === run.name && annotations[ANNOTATION.boundRunUid] === run.uid;
}

/**
 * The adopted pool pod as read, annotated with the Run's name and uid: what its sidecar's watch of its own pod waits
 * for. Written after the Run's Role, RoleBinding and status, so its first check reads everything it needs.
 */
export function buildAnnouncedPod<T extends KubeObject>(pod: T, run: RunRef): T {
  return { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, [ANNOTATION.boundRun]: run.name, [ANNOTATION.boundRunUid]: run.uid } } };
}
