// The controller's half of tying credentials to endpoints (policy/credential-endpoints.ts): when a Run picks a base
// URL for a provider and names credential Secrets, each Secret's annotation `leviath.dev/credential-endpoints` is
// read (metadata only, never a value) when the Run is pinned; a base URL some Secret does not tie keeps the Run
// from starting (RefusedByPolicy, naming the field and the Secret), and what each Secret ties is pinned into the
// runtime's configuration, where the runtime checks it again before a key goes out.
import type { Credential } from "../../api/common.ts";
import { CREDENTIAL_ANNOTATION } from "../../api/constants.ts";
import { REASON } from "../../api/status.ts";
import { decideKeyDestination, listRunBaseUrls, parseEndpointList, type CredentialEndpoints } from "../../policy/credential-endpoints.ts";
import type { ClusterWriter } from "../cluster-port.ts";

/** A Run refused for its base URL looks again this often (the controller does not watch Secrets). */
const RECHECK_MS = 5_000;

/** What a Secret's metadata says it ties, or that it is missing. */
export type CredentialEndpointsRead = CredentialEndpoints & { readonly found: boolean };

/** The ties to pin, or why the Run may not start yet: pure, over what was read. */
export function decideCredentialEndpoints(runtime: unknown, read: readonly CredentialEndpointsRead[]): { ok: true; ties: CredentialEndpoints[] } | { ok: false; reason: string; message: string } {
  const missing = read.find((r) => !r.found);
  const ties = read.map(({ secretName, endpoints }) => ({ secretName, endpoints }));
  for (const target of listRunBaseUrls(runtime)) {
    if (missing !== undefined) {
      return { ok: false, reason: REASON.secretNotFound, message: `${target.field} is used with the credentials only where each credential Secret ties it, and Secret '${missing.secretName}' is not found in the Run's namespace; the Run waits` };
    }
    const refused = decideKeyDestination(target, ties);
    if (refused !== undefined) return { ok: false, reason: REASON.refusedByPolicy, message: refused };
  }
  return { ok: true, ties };
}

/**
 * Reads what the Run's credential Secrets tie, when the Run picks a base URL (metadata only): undefined when it picks
 * none, or names no credential (nothing to tie, nothing pinned).
 */
export async function readCredentialEndpoints(
  writer: Pick<ClusterWriter, "readMetadata">,
  namespace: string,
  run: { runtime: unknown; credentials: readonly Credential[] },
): Promise<CredentialEndpointsRead[] | undefined> {
  if (listRunBaseUrls(run.runtime).length === 0 || run.credentials.length === 0) return undefined;
  return Promise.all(run.credentials.map(async (c): Promise<CredentialEndpointsRead> => {
    const found = await writer.readMetadata("secret", namespace, c.secretName);
    return { secretName: c.secretName, found: found !== undefined, endpoints: parseEndpointList(found?.metadata.annotations?.[CREDENTIAL_ANNOTATION.endpoints]) };
  }));
}

/** The ties to pin (undefined: nothing was read, nothing to tie), or why the Run waits: pure, over what was read. */
export function checkCredentialEndpoints(runtime: unknown, read: readonly CredentialEndpointsRead[] | undefined): { ties: CredentialEndpoints[] | undefined } | { blocked: true; phase: "Pending"; reason: string; message: string; recheckMs: number } {
  if (read === undefined) return { ties: undefined };
  const decided = decideCredentialEndpoints(runtime, read);
  if (decided.ok) return { ties: decided.ties };
  return { blocked: true, phase: "Pending", reason: decided.reason, message: decided.message, recheckMs: RECHECK_MS };
}
