// Where a credential may be sent. A Run's `runtime.providers.<name>.baseUrl` says where the runtime sends requests,
// and with them the provider's key (`<NAME>_API_KEY`) from the credential Secrets: a Run that names an opted-in
// Secret it may not read, and its own server as the base URL, would receive that key. So a base URL the Run picks
// is used with a key only where every credential Secret of the Run ties it: the Secret's owner lists, in the
// annotation `leviath.dev/credential-endpoints`, the endpoints its keys may go to. The controller refuses such a
// Run before it starts (RefusedByPolicy, naming the field), and pins what each Secret ties into the runtime's
// configuration, where the runtime and the adapter check it again before a key goes out.

import { CREDENTIAL_ANNOTATION } from "../api/constants.ts";

const ANNOTATION = CREDENTIAL_ANNOTATION.endpoints;

/** What one credential Secret ties, as pinned at the Run's start. */
export interface CredentialEndpoints {
  readonly secretName: string;
  readonly endpoints: readonly string[];
}

/** A base URL the Run picks for a provider, with the field that says so. */
export interface RunBaseUrl {
  readonly provider: string;
  readonly baseUrl: string;
  readonly field: string;
}

/** The http(s) endpoints an annotation value lists; anything else in it ties nothing. */
export function parseEndpointList(value: string | undefined): string[] {
  return (value ?? "").split(/[\s,]+/).filter((e) => e !== "" && parseHttpUrl(e) !== undefined);
}

function parseHttpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `baseUrl` is one of `endpoints` or below one: the same scheme, host and port, and a path equal to the
 * endpoint's or under it. A base URL carrying a user name or password is never tied.
 */
export function isEndpointTied(baseUrl: string, endpoints: readonly string[]): boolean {
  const base = parseHttpUrl(baseUrl);
  if (base === undefined || base.username !== "" || base.password !== "") return false;
  return endpoints.some((e) => {
    const tied = parseHttpUrl(e);
    if (tied === undefined || tied.origin !== base.origin) return false;
    const path = tied.pathname.replace(/\/+$/, "");
    return path === "" || base.pathname === path || base.pathname.startsWith(`${path}/`);
  });
}

/** The base URLs the Run's verbatim `runtime` picks (`providers.<name>.baseUrl`, strings only). */
export function listRunBaseUrls(runtime: unknown): RunBaseUrl[] {
  const providers = (runtime as { providers?: unknown } | null | undefined)?.providers;
  if (providers === null || typeof providers !== "object") return [];
  return Object.entries(providers as Record<string, unknown>).flatMap(([provider, config]) => {
    const baseUrl = (config as { baseUrl?: unknown } | null | undefined)?.baseUrl;
    return typeof baseUrl === "string" ? [{ provider, baseUrl, field: `spec.runtime.providers.${provider}.baseUrl` }] : [];
  });
}

/**
 * Why a key may not go to the base URL the Run picked for a provider (undefined: it may): pinned ties absent
 * (fail closed), no credential Secret at all, or one that does not tie it.
 */
export function decideKeyDestination(target: RunBaseUrl, ties: readonly CredentialEndpoints[] | undefined): string | undefined {
  const where = `${target.field} '${target.baseUrl}'`;
  if (ties === undefined || ties.length === 0) {
    return `${where}: a key goes only to an endpoint its credential Secret ties (annotation ${ANNOTATION}), and no credential Secret ties one for this Run`;
  }
  const untied = ties.find((t) => !isEndpointTied(target.baseUrl, t.endpoints));
  if (untied === undefined) return undefined;
  return `${where} is not an endpoint credential Secret '${untied.secretName}' ties (its annotation ${ANNOTATION}: ${untied.endpoints.length > 0 ? untied.endpoints.join(", ") : "none"}); its keys are never sent where a Run points them`;
}
