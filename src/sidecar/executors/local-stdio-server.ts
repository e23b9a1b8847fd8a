// Standalone stdio MCP servers: the server's command runs as a local process under the same confinement as
// `shell` (its own PID and mount namespaces, read-only root, the sidecar's files hidden), in the workdir, with
// a minimal environment plus the server's own `env` (never the sidecar's). It lives as long as the gateway's
// connection; killing its group ends its namespace and every process it left.
import { spawn } from "node:child_process";
import type { McpServer } from "../../api/leviath-policy.ts";
import type { StdioProcess } from "../gateway/capped-stdio.ts";
import type { StdioLauncher } from "../gateway/mcp-gateway.ts";
import { buildConfinedArgv, isRootProcess, type Confinement } from "./local-confinement.ts";

/** Quotes one word for `/bin/sh`. */
export function quoteShellWord(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A launcher of confined stdio servers. */
export function createLocalStdioLauncher(confinement: Confinement, baseEnv: Readonly<Record<string, string>>): StdioLauncher {
  return (server: McpServer, env: Readonly<Record<string, string>>): StdioProcess => {
    const line = ["exec", server.command!, ...(server.args ?? [])].map((w, i) => (i === 0 ? w : quoteShellWord(w))).join(" ");
    const [file, ...args] = buildConfinedArgv(confinement, line, isRootProcess());
    const child = spawn(file!, args, { cwd: confinement.workdir, env: { ...baseEnv, ...env }, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    return {
      stdin: child.stdin, stdout: child.stdout, stderr: child.stderr,
      onClose: (listener) => child.on("close", () => listener()),
      onError: (listener) => child.on("error", listener),
      kill() {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
      },
    };
  };
}
