// Whether the credential Secrets a Run names may reach its agent container: each must exist in the Run's
// namespace and carry the opt-in label `leviath.dev/credential: "true"` (docs/security.md says why). Only the
// Secret's metadata is read, so the controller never holds a credential's value.
import type { Credential } from "../../api/common.ts";
import { LABEL } from "../../api/constants.ts";
import { CONDITION, REASON } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ClusterWriter } from "../cluster-port.ts";
import type { ConditionDecision } from "../conditions.ts";

/** The label value that opts a Secret in. */
export const CREDENTIAL_OPT_IN = "true";

/** The metadata of each credential Secret the run names, in order (undefined: not found). */
export function readCredentialSecrets(writer: Pick<ClusterWriter, "readMetadata">, namespace: string, credentials: readonly Credential[]): Promise<(KubeObject | undefined)[]> {
  return Promise.all(credentials.map((c) => writer.readMetadata("secret", namespace, c.secretName)));
}

/** CredentialsReady for these Secrets, from what {@link readCredentialSecrets} found (undefined when the run names none); pure. */
export function checkCredentials(found: readonly (KubeObject | undefined)[], namespace: string, credentials: readonly Credential[]): ConditionDecision | undefined {
  if (credentials.length === 0) return undefined;
  const type = CONDITION.credentialsReady;
  const missing = credentials.filter((_, i) => found[i] === undefined).map((c) => c.secretName);
  if (missing.length > 0) {
    return { type, status: "False", reason: REASON.secretNotFound, message: `credential Secret${missing.length > 1 ? "s" : ""} ${missing.map((n) => `'${n}'`).join(", ")} not found in namespace '${namespace}'; the engine pod waits for ${missing.length > 1 ? "them" : "it"}` };
  }
  const refused = credentials.filter((_, i) => found[i]?.metadata.labels?.[LABEL.credential] !== CREDENTIAL_OPT_IN).map((c) => c.secretName);
  if (refused.length > 0) {
    return { type, status: "False", reason: REASON.secretNotOptedIn, message: `credential Secret${refused.length > 1 ? "s" : ""} ${refused.map((n) => `'${n}'`).join(", ")} lack${refused.length > 1 ? "" : "s"} the label ${LABEL.credential}: "${CREDENTIAL_OPT_IN}" (only opted-in Secrets can be named); the engine pod waits` };
  }
  return { type, status: "True", reason: REASON.credentialsFound, message: `${credentials.length} credential Secret${credentials.length > 1 ? "s" : ""} for the agent container: ${credentials.map((c) => `'${c.secretName}' (${c.as})`).join(", ")}` };
}
