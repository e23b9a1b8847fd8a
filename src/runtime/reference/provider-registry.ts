// Which wire protocol, base URL and key each provider name means. The blueprint (the Agent's author, untrusted)
// names only a provider and a model; where requests go and which key they carry come from the Run's side: its
// credentials (environment or files, docs/runtime.md) and its `runtime.providers`. So an Agent cannot send the
// Run creator's key to a server of its choosing. Nor can the Run send a credential's key to one of its own: a base
// URL it picks gets the key only where every credential Secret ties it (pinned in runtime.json,
// policy/credential-endpoints.ts); else the provider is refused and no request goes out.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createAnthropicProvider } from "./providers/anthropic.ts";
import { createOpenAiProvider } from "./providers/openai.ts";
import type { RetryPolicy } from "./providers/provider-http.ts";
import type { ModelProvider } from "./providers/types.ts";
import { decideKeyDestination, type CredentialEndpoints } from "../../policy/credential-endpoints.ts";

/** The two wire protocols. */
export const PROTOCOLS = ["anthropic", "openai"] as const;
/** A wire protocol. */
export type Protocol = (typeof PROTOCOLS)[number];

/** Where `files` credentials are mounted: `<dir>/<secretName>/<key>` (ENGINE_PATHS.credentials). */
export const CREDENTIALS_DIR = "/var/run/leviath/credentials";

/** The Run's settings for one provider (`spec.runtime.providers.<name>`). */
export interface ProviderConfig {
  readonly protocol?: Protocol;
  readonly baseUrl?: string;
  readonly stream?: boolean;
}

/** The environment-variable stem of a provider: `anthropic` → `ANTHROPIC`, `my-vllm` → `MY_VLLM`. */
export function providerEnvStem(provider: string): string {
  return provider.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/** Looks a credential key up: the environment first, then every mounted credential Secret (first by name). */
export function createCredentialLookup(env: Readonly<Record<string, string | undefined>>, dir: string = CREDENTIALS_DIR): (key: string) => string | undefined {
  let secrets: string[] | undefined;
  return (key) => {
    const fromEnv = env[key];
    if (fromEnv !== undefined && fromEnv !== "") return fromEnv.trim();
    try {
      secrets ??= readdirSync(dir).sort();
    } catch {
      secrets = [];
    }
    for (const s of secrets) {
      try {
        const v = readFileSync(join(dir, s, key), "utf8").trim();
        if (v !== "") return v;
      } catch { /* not in this Secret */ }
    }
    return undefined;
  };
}

/** What the registry needs. */
export interface RegistryInput {
  readonly configs: Readonly<Record<string, ProviderConfig>>;
  readonly lookup: (key: string) => string | undefined;
  readonly retry?: RetryPolicy;
  /** What each credential Secret ties, pinned at the Run's start (runtime.json `credentialEndpoints`); absent: none. */
  readonly credentialEndpoints?: readonly CredentialEndpoints[] | undefined;
}

/** A provider for a name, or why there is none (a message naming what to set). */
export type ProviderLookup = { ok: true; provider: ModelProvider } | { ok: false; message: string };

/**
 * Providers by name. `anthropic` speaks the Messages API, `openai` and every other name Chat Completions unless
 * `protocol` says otherwise. The base URL is `runtime.providers.<name>.baseUrl`, else `<NAME>_BASE_URL`, else the
 * vendor's own for the two known names; the key is `<NAME>_API_KEY` (a self-hosted server may need none).
 */
export function createProviderRegistry(input: RegistryInput): (provider: string, timeoutMs?: number) => ProviderLookup {
  return (name, timeoutMs) => {
    const stem = providerEnvStem(name);
    const config = input.configs[name] ?? {};
    const protocol: Protocol = config.protocol ?? (name === "anthropic" ? "anthropic" : "openai");
    const baseUrl = config.baseUrl ?? input.lookup(`${stem}_BASE_URL`);
    const apiKey = input.lookup(`${stem}_API_KEY`);
    const missing = checkEndpoint(name, stem, { baseUrl, apiKey });
    if (missing !== undefined) return { ok: false, message: missing };
    // The Run's own base URL gets a key only where the credentials tie it (fail closed: no ties, no key sent).
    const untied = config.baseUrl === undefined || apiKey === undefined ? undefined
      : decideKeyDestination({ provider: name, baseUrl: config.baseUrl, field: `runtime.providers.${name}.baseUrl` }, input.credentialEndpoints);
    if (untied !== undefined) return { ok: false, message: `provider '${name}': ${untied}` };
    const opts = { name, apiKey, ...(baseUrl === undefined ? {} : { baseUrl }), ...(config.stream === undefined ? {} : { stream: config.stream }), ...(timeoutMs === undefined ? {} : { timeoutMs }), ...(input.retry ? { retry: input.retry } : {}) };
    return { ok: true, provider: protocol === "anthropic" ? createAnthropicProvider(opts) : createOpenAiProvider(opts) };
  };
}

/** Why a provider cannot be reached with what is set (a message naming what to set); `undefined` when it can. */
function checkEndpoint(name: string, stem: string, endpoint: { baseUrl: string | undefined; apiKey: string | undefined }): string | undefined {
  const { baseUrl, apiKey } = endpoint;
  if (baseUrl === undefined && name !== "anthropic" && name !== "openai") {
    return `provider '${name}' has no base URL: set runtime.providers.${name}.baseUrl on the Run or ${stem}_BASE_URL in its credentials`;
  }
  if (apiKey === undefined && baseUrl === undefined) {
    return `provider '${name}' has no API key: add ${stem}_API_KEY to the Run's credentials (a Secret, as env or files)`;
  }
  try {
    if (baseUrl !== undefined) new URL(baseUrl);
  } catch {
    return `provider '${name}': base URL '${baseUrl}' is not a URL`;
  }
  return undefined;
}
