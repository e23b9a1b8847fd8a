// The marks by which the controller and the sidecars recognise an object as one they made: the labels, annotations
// and owner references they read when they decide by name, label or owner (docs/security.md, "Authorship"). Any
// writer of a kind may set them, so the chart's `<release>-authorship` ValidatingAdmissionPolicy lets only the
// operator's ServiceAccount set, change or remove them (and a Run's sidecar only on the audit and result ConfigMaps
// its Role names). The policy is YAML the API server runs; these lists are what it must hold, and
// `test/integration/chart/chart-authorship.test.ts` checks the rendered policy against them.
import { APPROVAL_ANNOTATION, FIELD_MANAGER, GROUP, LABEL, SIDECAR_FIELD_MANAGER } from "../api/constants.ts";
import { ANNOTATION, COMPONENT } from "./names.ts";
import { PROBE_LABEL, PROBE_ROLE_LABEL } from "./network-probe.ts";

/** Labels the operator writes and reads back as its own: any value of them is a mark. */
export const TRUSTED_LABELS: readonly string[] = [
  LABEL.run, LABEL.runUid, LABEL.agent, LABEL.component, LABEL.sandboxSignature, LABEL.network,
  LABEL.pool, LABEL.poolState, LABEL.poolPair, PROBE_LABEL, PROBE_ROLE_LABEL,
];

/** `app.kubernetes.io/managed-by` is a mark with these values only (the label is everyone's, Helm's included). */
export const TRUSTED_MANAGERS: readonly string[] = [FIELD_MANAGER, SIDECAR_FIELD_MANAGER];

/**
 * Labels an object's owner sets to opt it in to being named by Agents and Runs: never marks, since their point is
 * that whoever may write the object sets them.
 */
export const OWNER_OPT_IN_LABELS: readonly string[] = [LABEL.credential, LABEL.blueprintFiles, LABEL.mcpServer];

/** Annotations the operator writes and reads back (a pod's spec hash, a pool pod's binding, an Approval's sidecar). */
export const TRUSTED_ANNOTATIONS: readonly string[] = [
  ANNOTATION.specHash, ANNOTATION.poolHash, ANNOTATION.boundRun, ANNOTATION.boundRunUid, ANNOTATION.poolPair,
  APPROVAL_ANNOTATION.sidecarServiceAccount,
];

/** An owner reference to any object of this API group (a Run, an Agent, the LeviathPolicy) is a mark. */
export const TRUSTED_OWNER_GROUP = GROUP;

/** The kinds the policy guards, by API group and plural: every kind the operator or a sidecar makes and reads back. */
export const MARKED_RESOURCES: readonly { readonly group: string; readonly resources: readonly string[] }[] = [
  { group: "", resources: ["pods", "configmaps", "serviceaccounts", "persistentvolumeclaims"] },
  { group: "rbac.authorization.k8s.io", resources: ["roles", "rolebindings"] },
  { group: "networking.k8s.io", resources: ["networkpolicies"] },
  { group: GROUP, resources: ["approvals"] },
];

/** What a sidecar may mark, and only on a ConfigMap its Run's Role lets it patch by name: its audit and result. */
export const SIDECAR_MARKS = {
  labels: [LABEL.run, LABEL.component] as readonly string[],
  manager: SIDECAR_FIELD_MANAGER,
  components: [COMPONENT.audit, COMPONENT.result] as readonly string[],
} as const;

/** The name of the chart's policy (and its binding) for a release whose objects are named `fullname-…`. */
export function buildAuthorshipPolicyName(fullname: string): string {
  return `${fullname}-authorship`;
}

/** A list of strings as a CEL list literal, as the chart's policy writes each of the lists above. */
export function formatCelList(values: readonly string[]): string {
  return `[${values.map((v) => `'${v}'`).join(", ")}]`;
}
