import { GROUP, LABEL } from "../api/constants.ts";
import { PLURAL } from "../api/crd-definitions.ts";
import type { KubeObject } from "./kube-types.ts";
import { buildAuditChunkName, buildChildMeta, buildChildNames, buildLabelValue, COMPONENT, MAX_AUDIT_CHUNKS, NETWORK_NONE, type RunRef } from "./names.ts";
import { listResumeSnapshotNames } from "./resume-snapshot.ts";
import { buildRolloutSnapshotName, ROLLOUT_ROLES } from "./rollout-snapshot.ts";
import { buildSnapshotData, type RunSnapshot } from "./run-snapshot.ts";

/** The immutable ConfigMap that pins a run: its resolved policy (sidecar), blueprint (runtime) and generations. */
export function buildPolicyConfigMap(run: RunRef, snapshot: RunSnapshot): KubeObject {
  const meta = buildChildMeta(run, snapshot.controller.agent.name, { name: buildChildNames(run.name).configMap, component: COMPONENT.policy });
  return { apiVersion: "v1", kind: "ConfigMap", metadata: meta, immutable: true, data: buildSnapshotData(snapshot) };
}

/** The sidecar's identity: a per-Run ServiceAccount whose token is mounted into the sidecar container only. */
export function buildServiceAccount(run: RunRef, agent: string): KubeObject {
  const meta = buildChildMeta(run, agent, { name: buildChildNames(run.name).serviceAccount, component: COMPONENT.sidecarIdentity });
  return { apiVersion: "v1", kind: "ServiceAccount", metadata: meta, automountServiceAccountToken: false };
}

/**
 * What the sidecar may do: exec into exactly this run's pods (named, never all pods), read and report on its own
 * Run, watch the relay the Approval controller writes for it (its `<run>-approvals` ConfigMap; the Approvals it
 * names are readable through the controller's separate approval-reader Role), mark the Approvals it applied
 * consumed (admission lets it do so only for those bound to its Run), and write its result and audit ConfigMaps.
 * A rule with no pod names is left out, since an empty `resourceNames` means every pod. `create` cannot be limited
 * by name in Kubernetes RBAC, so the sidecar may create ConfigMaps of any name; it can read, change or delete only
 * its own, a relay it plants for another Run answers nothing there, and an audit or result ConfigMap it plants is
 * neither read as that Run's nor in its way (docs/security.md).
 */
export function buildRole(run: RunRef, agent: string, execTargets: readonly string[]): KubeObject {
  const pods = [...execTargets].sort();
  const rules: Record<string, unknown>[] = [];
  if (pods.length > 0) {
    rules.push({ apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: pods });
    rules.push({ apiGroups: [""], resources: ["pods/exec"], verbs: ["create", "get"], resourceNames: pods });
  }
  rules.push({ apiGroups: [GROUP], resources: [PLURAL.run], verbs: ["get"], resourceNames: [run.name] });
  rules.push({ apiGroups: [GROUP], resources: [`${PLURAL.run}/status`], verbs: ["get", "patch"], resourceNames: [run.name] });
  // list and watch by name: the sidecar's watch carries fieldSelector=metadata.name=<run>-approvals.
  rules.push({ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"], resourceNames: [buildChildNames(run.name).approvals] });
  rules.push({ apiGroups: [GROUP], resources: [`${PLURAL.approval}/status`], verbs: ["patch"] });
  const own = [buildChildNames(run.name).result, ...Array.from({ length: MAX_AUDIT_CHUNKS }, (_, i) => buildAuditChunkName(run.name, i))];
  rules.push({ apiGroups: [""], resources: ["configmaps"], verbs: ["create"] });
  // delete: a name someone else took first (another Run's sidecar may create any name) is deleted and made again.
  rules.push({ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "patch", "delete"], resourceNames: own });
  // The snapshots a resume may write (read only: the controller writes them, the sidecar switches to them).
  rules.push({ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: listResumeSnapshotNames(run.name) });
  // The policy rollout's snapshots (read only: the controller writes them, the sidecar decides under them).
  rules.push({ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: ROLLOUT_ROLES.map((r) => buildRolloutSnapshotName(run.name, r)) });
  const meta = buildChildMeta(run, agent, { name: buildChildNames(run.name).role, component: COMPONENT.sidecarIdentity });
  return { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: meta, rules };
}

/** Binds the run's Role to the run's ServiceAccount, nothing else. */
export function buildRoleBinding(run: RunRef, agent: string): KubeObject {
  const names = buildChildNames(run.name);
  const meta = buildChildMeta(run, agent, { name: names.roleBinding, component: COMPONENT.sidecarIdentity });
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: meta,
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: names.role },
    subjects: [{ kind: "ServiceAccount", name: names.serviceAccount, namespace: run.namespace }],
  };
}

/**
 * `network = false`: deny all ingress and egress for this run's sandbox pods labelled `network: none` (loopback
 * still works and DNS is blocked, as with `--network none`). Enforcement depends on the cluster's CNI.
 */
export function buildNetworkPolicy(run: RunRef, agent: string): KubeObject {
  const meta = buildChildMeta(run, agent, { name: buildChildNames(run.name).networkPolicy, component: COMPONENT.network });
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: meta,
    spec: {
      podSelector: { matchLabels: { [LABEL.run]: buildLabelValue(run.name), [LABEL.network]: NETWORK_NONE } },
      policyTypes: ["Ingress", "Egress"],
    },
  };
}

/** The per-Run workspace claim, when the Run names no claim of its own. */
export function buildWorkspaceClaim(run: RunRef, agent: string, ws: { size: string; accessMode: string; storageClassName?: string }): KubeObject {
  const meta = buildChildMeta(run, agent, { name: buildChildNames(run.name).workspace, component: COMPONENT.workspace });
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: meta,
    spec: {
      accessModes: [ws.accessMode],
      resources: { requests: { storage: ws.size } },
      ...(ws.storageClassName ? { storageClassName: ws.storageClassName } : {}),
    },
  };
}
