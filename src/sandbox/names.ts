import { API_VERSION, FIELD_MANAGER, KIND, LABEL } from "../api/constants.ts";
import { MAX_AUDIT_CHUNKS as MAX_STATUS_AUDIT_CHUNKS } from "../api/status.ts";
import { computeHash } from "./hash.ts";
import type { ObjectMeta, OwnerReference } from "./kube-types.ts";

/** Annotations the operator writes. */
export const ANNOTATION = {
  /** Hash of the desired pod spec: pods are immutable, so a different hash means delete and recreate. */
  specHash: "leviath.dev/spec-hash",
  /** On a pool pod: the hash of what it was made from; a pod whose hash is not its pool's current one is replaced unbound. */
  poolHash: "leviath.dev/pool-hash",
  /** On an adopted pool pod: the Run it is bound to, and that Run's uid (the sidecar checks both against the Run). */
  boundRun: "leviath.dev/bound-run",
  boundRunUid: "leviath.dev/bound-run-uid",
  /** On a pool sandbox pod: the exact name of the pool engine pod it was made for (the label may be shortened). */
  poolPair: "leviath.dev/pool-pair",
} as const;

/** Values of the `leviath.dev/component` label. */
export const COMPONENT = {
  engine: "engine",
  sandbox: "sandbox",
  policy: "run-policy",
  sidecarIdentity: "sidecar-identity",
  network: "network-policy",
  workspace: "workspace",
  /** Written by the sidecar (label `managed-by: leviath-sidecar`), never pruned by the controller. */
  audit: "audit",
  result: "result",
  /** The answers the Approval controller relays to the sidecar (which may read nothing else of the Approvals). */
  approvals: "approvals",
} as const;

/** Value of the `leviath.dev/network` label on sandbox pods whose traffic is denied. */
export const NETWORK_NONE = "none";

/** The identity of a Run, as its children refer to it. */
export interface RunRef {
  name: string;
  namespace: string;
  uid: string;
}

const MAX_NAME = 253;
const MAX_LABEL = 63;

function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 17)}-${computeHash(text)}`;
}

/** A label value naming `text`: itself when it fits in 63 characters, else a prefix plus a hash. */
export function buildLabelValue(text: string): string {
  return shorten(text, MAX_LABEL);
}

/** The deterministic name of a Run's child: `<run>-<suffix>`, shortened with a hash when too long. */
export function buildChildName(run: string, suffix: string): string {
  return `${shorten(run, MAX_NAME - suffix.length - 1)}-${suffix}`;
}

/** Names of every child of a Run (sandbox pods are named per signature by {@link buildSandboxPodName}). */
export function buildChildNames(run: string) {
  return {
    configMap: buildChildName(run, "policy"),
    serviceAccount: buildChildName(run, "sidecar"),
    role: buildChildName(run, "sidecar"),
    roleBinding: buildChildName(run, "sidecar"),
    enginePod: buildChildName(run, "engine"),
    networkPolicy: buildChildName(run, "isolate"),
    workspace: buildChildName(run, "workspace"),
    /** Written by the sidecar: a `submit_output` too large for `status.result.inline`. */
    result: buildChildName(run, "result"),
    approvals: buildChildName(run, "approvals"),
    /** The Role (and its binding) that lets the sidecar get exactly the Approvals its relay names. */
    approvalReader: buildChildName(run, "approval-reader"),
  };
}

/** Most audit ConfigMaps per Run (`<run>-audit-000` ...): with {@link AUDIT_CHUNK_BYTES} each, the audit's bound. */
export const MAX_AUDIT_CHUNKS = MAX_STATUS_AUDIT_CHUNKS;
/** What one audit ConfigMap holds at most (the API server's object limit is 1 MiB). */
export const AUDIT_CHUNK_BYTES = 768 * 1024;

/** The name of a Run's audit ConfigMap number `index` (zero-padded, so names sort in order). */
export function buildAuditChunkName(run: string, index: number): string {
  return buildChildName(run, `audit-${String(index).padStart(3, "0")}`);
}

/** The name of the warm sandbox pod for one signature. */
export function buildSandboxPodName(run: string, signature: string): string {
  return buildChildName(run, `sbx-${signature}`);
}

/** Labels every child of a Run carries; they select the Run's objects and never carry untrusted text unbounded. */
export function buildRunLabels(run: string, agent: string, component: string): Record<string, string> {
  return {
    [LABEL.run]: buildLabelValue(run),
    [LABEL.agent]: buildLabelValue(agent),
    [LABEL.component]: component,
    [LABEL.managedBy]: FIELD_MANAGER,
  };
}

/** The controller owner reference to a Run: garbage collection removes the child with its Run. */
export function buildOwnerReference(run: RunRef): OwnerReference {
  return { apiVersion: API_VERSION, kind: KIND.run, name: run.name, uid: run.uid, controller: true, blockOwnerDeletion: true };
}

/** Metadata of a Run's child. */
export function buildChildMeta(run: RunRef, agent: string, child: { name: string; component: string; labels?: Record<string, string> }): ObjectMeta {
  const { name, component, labels: extraLabels = {} } = child;
  return {
    name,
    namespace: run.namespace,
    labels: { ...buildRunLabels(run.name, agent, component), ...extraLabels },
    ownerReferences: [buildOwnerReference(run)],
  };
}
