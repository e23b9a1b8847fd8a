// Standalone stdio MCP servers: the server's command runs as a local process under the same confinement as
// `shell` (its own PID and mount namespaces, read-only root, the sidecar's files hidden), in the workdir, with
// a minimal environment plus the server's own `env` (never the sidecar's). It lives as long as the gateway's
// connection; killing its group ends its namespace and every process it left.
import { spawn } from "node:child_process";
import type { McpServer } from "../../api/policy.ts";
import type { StdioChild } from "../gateway/capped-stdio.ts";
import { buildConfinedArgv, isRootProcess, type Confinement } from "./local-confinement.ts";

/** Quotes one word for `/bin/sh`. */
function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A launcher of confined stdio servers. */
export function createLocalStdioLauncher(confinement: Confinement, baseEnv: Readonly<Record<string, string>>): (server: McpServer, env: Readonly<Record<string, string>>) => StdioChild {
  return (server, env) => {
    const line = ["exec", server.command!, ...(server.args ?? [])].map((w, i) => (i === 0 ? w : quote(w))).join(" ");
    const [file, ...args] = buildConfinedArgv(confinement, line, isRootProcess());
    return spawn(file!, args, { cwd: confinement.workdir, env: { ...baseEnv, ...env }, detached: true, stdio: ["pipe", "pipe", "pipe"] });
  };
}
