// `${VAR}` in an MCP server's header and env values, and the one rule about a stdio server's env from a Secret:
// a stdio server runs in the sandbox pod, where the model's commands run as the same user and can read every
// process's /proc/<pid>/environ, so a Secret's value in its environment is the model's. The admin opts each such
// server in (`secretEnvInSandbox: true`); without it the server is refused and never started, rather than started
// with the value left out. Pure.
import type { McpServer } from "../api/leviath-policy.ts";

/** `${NAME}` in a header or env value (global: use with `replace` or `matchAll`). */
export const MCP_VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Why a stdio server may not take a Secret's value into the sandbox: its first env entry naming a `${VAR}`,
 * when the admin did not opt it in; undefined when it may (or takes none). The text names the entry and the fix.
 */
export function computeSandboxSecretEnvRefusal(server: McpServer): string | undefined {
  if (server.command === undefined || server.secretEnvInSandbox === true) return undefined;
  for (const [key, value] of Object.entries(server.env ?? {})) {
    const variable = [...value.matchAll(MCP_VAR)][0]?.[1];
    if (variable === undefined) continue;
    const secret = server.secretRef === undefined ? "a Secret" : `Secret '${server.secretRef.name}'`;
    return `env '${key}': \${${variable}} would put a value of ${secret} into the sandbox pod, where the model's commands can read it; ` +
      "the server is not started (the admin allows it with secretEnvInSandbox: true on the server)";
  }
  return undefined;
}
