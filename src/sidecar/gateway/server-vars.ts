// Where an MCP server's `${VAR}` values come from. Standalone: the sidecar's environment (upstream's rule). In a
// cluster: only the files of the one Secret the admin named for that server (`secretRef`), which the controller
// mounts into the sidecar container alone at `<dir>/<secretName>/<KEY>`; never the environment, never another
// server's Secret. The files are read on each connect, so a rotated Secret is used at the next connection. A
// stdio server's env from a Secret would live in the sandbox pod: refused unless the admin opted the server in.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { McpServer } from "../../api/leviath-policy.ts";
import { computeSandboxSecretEnvRefusal, MCP_VAR } from "../../policy/mcp-secret-env.ts";

/** A Secret's data key (the kubelet names the files after them): anything else is never a path. */
const SECRET_KEY = /^[-._A-Za-z0-9]+$/;

/** Looks up one variable; a missing one throws with a message naming the server and where it was looked for. */
export type VarLookup = (name: string, where: string) => string;

/** Where the values come from: the environment, or the mounted Secrets' directory. */
export type VarSource = { readonly kind: "env"; readonly env: Readonly<Record<string, string | undefined>> } | { readonly kind: "secrets"; readonly dir: string };

/** The lookup for one server's `${VAR}` values. */
export function buildVarLookup(server: McpServer, source: VarSource): VarLookup {
  if (source.kind === "env") {
    return (name, where) => {
      const v = source.env[name];
      if (v === undefined) throw new Error(`mcp server '${server.name}' ${where}: \${${name}} is not set`);
      return v;
    };
  }
  const secret = server.secretRef?.name;
  return (name, where) => {
    if (secret === undefined) throw new Error(`mcp server '${server.name}' ${where}: \${${name}} needs a secretRef (in a cluster values come only from the server's Secret)`);
    let value: string | undefined;
    try {
      value = SECRET_KEY.test(name) ? readFileSync(join(source.dir, secret, name), "utf8") : undefined;
    } catch {
      value = undefined;
    }
    if (value === undefined) throw new Error(`mcp server '${server.name}' ${where}: key '${name}' is not in Secret '${secret}'`);
    return value;
  };
}

/** Replaces `${VAR}` by its value; a missing one is an error naming it (never an empty value). */
export function expandVars(value: string, lookup: VarLookup, where: string): string {
  return value.replace(MCP_VAR, (_, name: string) => lookup(name, where));
}

/** Every value of a header or env map expanded. */
export function expandAll(map: Readonly<Record<string, string>> | undefined, lookup: VarLookup, what: string): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).map(([k, v]) => [k, expandVars(v, lookup, `${what} '${k}'`)]));
}

/**
 * A stdio server's env expanded. From the mounted Secrets (a cluster), a `${VAR}` is refused, naming the server and
 * the entry, unless the admin opted the server in with `secretEnvInSandbox`: the value would be in the sandbox pod.
 */
export function expandStdioEnv(server: McpServer, source: VarSource): Record<string, string> {
  const refusal = source.kind === "secrets" ? computeSandboxSecretEnvRefusal(server) : undefined;
  if (refusal !== undefined) throw new Error(`mcp server '${server.name}' ${refusal}`);
  return expandAll(server.env, buildVarLookup(server, source), "env");
}
