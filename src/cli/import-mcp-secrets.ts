// What `leviath import` adds to the MCP servers of an upstream config.toml, and what it says about them. Upstream
// reads `${VAR}` in a header or env value from its own environment; in a cluster the sidecar reads it only from the
// Secret the server's `secretRef` names (docs/mcp.md). So a server that uses one gets a secretRef (`<server>-mcp`)
// and a finding naming that Secret, its keys and the commands that create it and opt it in. A stdio server's env
// from a Secret would be in the sandbox pod, where the model's commands can read it: `secretEnvInSandbox` is the
// admin's call, never import's, so it stays unset and the finding says the trade. A literal header (or env value
// under a credential's name) is carried as written, and said: the policy shows it to whoever reads the policy.
import { LABEL } from "../api/constants.ts";
import type { McpServer } from "../api/leviath-policy.ts";
import type { LoadIssue } from "../config/load-error.ts";
import { describeMcpEntry } from "../config/mcp-servers-toml.ts";
import { MCP_VAR } from "../policy/mcp-secret-env.ts";

/** Header names that never carry a credential: a literal value of any other header is said. */
const PLAIN_HEADERS = ["accept", "accept-language", "content-type", "user-agent", "mcp-protocol-version"];
/** An env name that looks like a credential's: its literal value is said. */
const CREDENTIAL_NAME = /key|token|secret|passw|credential|auth|cookie/i;

/** A label value (the opt-in label's value is the server's name); an MCP server name is at most 48 characters. */
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A Secret name for a server (a DNS subdomain: `My_Server` → `my-server-mcp`), not one of `taken`. */
export function buildMcpSecretName(server: string, taken: ReadonlySet<string>): string {
  const base = `${server.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "server"}-mcp`;
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
  return name;
}

/** Every `${VAR}` of the server's headers and env: the variable and where it is written (`headers.Authorization`). */
function listVars(server: McpServer): { variable: string; where: string }[] {
  const out: { variable: string; where: string }[] = [];
  for (const [field, map] of [["headers", server.headers], ["env", server.env]] as const) {
    for (const [key, value] of Object.entries(map ?? {})) {
      for (const m of value.matchAll(MCP_VAR)) out.push({ variable: m[1]!, where: `${field}.${key}` });
    }
  }
  return out;
}

/** The literal values that may be credentials: any header but a plain one, an env value under a credential's name. */
function listLiterals(server: McpServer): string[] {
  const literal = (v: string) => [...v.matchAll(MCP_VAR)].length === 0;
  const headers = Object.entries(server.headers ?? {}).filter(([k, v]) => literal(v) && !PLAIN_HEADERS.includes(k.toLowerCase())).map(([k]) => `headers.${k}`);
  const env = Object.entries(server.env ?? {}).filter(([k, v]) => literal(v) && CREDENTIAL_NAME.test(k)).map(([k]) => `env.${k}`);
  return [...headers, ...env];
}

interface At {
  file: string;
  namespace: string;
}

/** The finding for a server whose `${VAR}`s now come from `secret`: which keys, and the commands that make it. */
function describeSecret(server: McpServer, secret: string, at: At): string {
  const vars = listVars(server);
  const keys = [...new Set(vars.map((v) => v.variable))];
  const uses = vars.map((v) => `\${${v.variable}} in ${v.where}`).join(", ");
  const lines = [
    `MCP server '${server.name}' takes ${uses} from Secret '${secret}' (its secretRef), key${keys.length === 1 ? "" : "s"} ${keys.join(", ")}: ` +
      "in a cluster the sidecar reads ${VAR} only from the server's Secret, never from an environment. " +
      "Create the Secret, and opt it in for this server, in each namespace whose Runs use the server:",
    `  kubectl -n ${at.namespace} create secret generic ${secret} ${keys.map((k) => `--from-literal=${k}="$${k}"`).join(" ")}`,
    `  kubectl -n ${at.namespace} label secret ${secret} ${LABEL.mcpServer}=${server.name}`,
  ];
  if (!LABEL_VALUE.test(server.name)) {
    lines.push(`The server's name is not a label value (it must begin and end with a letter or digit), so no Secret can be opted in for it: rename the server.`);
  }
  if (server.command !== undefined && vars.some((v) => v.where.startsWith("env."))) {
    lines.push(
      "A stdio server runs in the Run's sandbox pod, where the model's commands can read its environment, so a value of " +
        "this Secret in its env is the model's to read. secretEnvInSandbox is left unset: the server is refused (never " +
        "started) until you set secretEnvInSandbox: true on it in the LeviathPolicy, which you should do only for a key " +
        "you would hand the model itself.",
    );
  }
  return lines.join("\n");
}

/** The finding for literal values that may be credentials. */
function describeLiterals(server: McpServer, where: readonly string[]): string {
  return `MCP server '${server.name}' has a literal value in ${where.join(", ")}, carried into the LeviathPolicy as written: ` +
    "whoever can read the LeviathPolicy, or the ConfigMap that pins it in a Run's namespace, reads it. If it is a " +
    "credential, write it as ${VAR} in config.toml and import again: it then comes from the server's Secret.";
}

/**
 * The servers of an imported config.toml with a `secretRef` for each that uses `${VAR}` and names none, and the
 * findings about them: the Secret to create (and the stdio trade), and literal values that may be credentials.
 */
export function computeMcpSecretRefs(servers: readonly McpServer[], at: At): { servers: McpServer[]; warnings: LoadIssue[] } {
  const taken = new Set(servers.flatMap((s) => (s.secretRef ? [s.secretRef.name] : [])));
  const warnings: LoadIssue[] = [];
  const out = servers.map((server, i) => {
    const where = describeMcpEntry(i);
    const literals = listLiterals(server);
    if (literals.length > 0) warnings.push({ file: at.file, where, message: describeLiterals(server, literals) });
    if (listVars(server).length === 0) return server;
    const secret = server.secretRef?.name ?? buildMcpSecretName(server.name, taken);
    taken.add(secret);
    warnings.push({ file: at.file, where, message: describeSecret(server, secret, at) });
    return { ...server, secretRef: { name: secret } };
  });
  return { servers: out, warnings };
}
