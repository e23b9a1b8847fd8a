// The Python side of the AgentDojo harness, installed once and cached: a virtual environment with AgentDojo from
// PyPI (bench/agentdojo/requirements.txt) and the `leviath-agentdojo-server` command the packs' [[mcp_servers]]
// name. Shared by `npm run bench -- agentdojo` and test/integration/agentdojo.test.ts; a fresh machine needs
// python3 (with venv) and PyPI, nothing else.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The harness's directory. */
export const HARNESS_DIR = fileURLToPath(new URL(".", import.meta.url));

/** Where the virtual environment lives (LEVIATH_AGENTDOJO_VENV, else ~/.cache/leviath/agentdojo-venv). */
export function venvDir(): string {
  return process.env["LEVIATH_AGENTDOJO_VENV"] ?? join(homedir(), ".cache", "leviath", "agentdojo-venv");
}

/** The installed environment: its python and the directory holding `leviath-agentdojo-server`. */
export interface AgentDojoVenv {
  readonly python: string;
  readonly bin: string;
}

/**
 * Creates the environment if it is missing or its requirements changed (a stamp holds their digest), and writes
 * the server command into its bin directory (outside /tmp: the sidecar confines a stdio server with a private /tmp).
 */
export function ensureAgentDojoVenv(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): AgentDojoVenv {
  const dir = venvDir();
  const bin = join(dir, "bin");
  const python = join(bin, "python");
  const requirements = join(HARNESS_DIR, "requirements.txt");
  const digest = createHash("sha256").update(readFileSync(requirements)).digest("hex");
  const stamp = join(dir, ".leviath-requirements");
  if (!existsSync(python) || !existsSync(stamp) || readFileSync(stamp, "utf8") !== digest) {
    log(`agentdojo: installing ${requirements} into ${dir} (once; about a minute)`);
    mkdirSync(dir, { recursive: true });
    if (!existsSync(python)) execFileSync("python3", ["-m", "venv", dir], { stdio: "inherit" });
    execFileSync(python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements], { stdio: "inherit" });
    writeFileSync(stamp, digest);
  }
  const server = join(bin, "leviath-agentdojo-server");
  const script = `#!/bin/sh\nexec '${python}' '${join(HARNESS_DIR, "server.py")}' "$@"\n`;
  if (!existsSync(server) || readFileSync(server, "utf8") !== script) writeFileSync(server, script, { mode: 0o755 });
  return { python, bin };
}
