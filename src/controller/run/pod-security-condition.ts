// Whether the API server itself holds a Run's pods to the `restricted` Pod Security profile. The operator builds
// every pod to pass it, but only a namespace that enforces it has the server check that, and keeps the other
// pods of the namespace (which may mount the same workspace claim) from running privileged beside the sandboxes.
import { CONDITION, REASON } from "../../api/status.ts";
import type { ConditionDecision } from "../conditions.ts";

/** The Pod Security Admission label that makes the API server refuse pods the profile forbids. */
export const POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";
/** The profile every pod the operator creates is built for. */
export const RESTRICTED_PROFILE = "restricted";

/** The PodSecurityEnforced condition of a Run in `namespace`, from its labels (undefined: the namespace is not in the cache). */
export function decidePodSecurityCondition(namespace: string, labels: Readonly<Record<string, string>> | undefined): ConditionDecision {
  const type = CONDITION.podSecurityEnforced;
  if (labels === undefined) {
    return { type, status: "Unknown", reason: REASON.namespaceNotObserved, message: `namespace '${namespace}' is not visible to the controller; whether it enforces Pod Security '${RESTRICTED_PROFILE}' is unknown` };
  }
  const enforce = labels[POD_SECURITY_ENFORCE_LABEL];
  if (enforce === RESTRICTED_PROFILE) {
    return { type, status: "True", reason: REASON.podSecurityRestricted, message: `namespace '${namespace}' enforces Pod Security '${RESTRICTED_PROFILE}' (${POD_SECURITY_ENFORCE_LABEL}=${RESTRICTED_PROFILE})` };
  }
  return {
    type, status: "False", reason: REASON.namespaceNotRestricted,
    message: `namespace '${namespace}' does not enforce Pod Security '${RESTRICTED_PROFILE}' (${POD_SECURITY_ENFORCE_LABEL} is ${enforce === undefined ? "unset" : `'${enforce}'`}): `
      + "the Run's pods are built to pass it, but the API server does not check them, and other pods of the namespace may run privileged beside the sandboxes; "
      + `label it: kubectl label namespace ${namespace} ${POD_SECURITY_ENFORCE_LABEL}=${RESTRICTED_PROFILE}`,
  };
}
