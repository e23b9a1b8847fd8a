// The third-party MCP clients the runtime adapters launch, installed pinned from npm into
// ~/.cache/leviath/clients/<name>-<version>/ once (a fresh machine rebuilds it; nothing enters package.json), and a
// test-only runner that does what the adapter's caller does: write a Launch's files, start its command with its
// environment and nothing else. (The product's entry point, `leviath adapter <kind>`, replaces the runner.)
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CODEX_VERSION } from "../../src/runtimes/codex.ts";
import type { Launch } from "../../src/runtimes/launch.ts";
import { OPENAI_AGENTS_COMMAND, OPENAI_AGENTS_VERSION } from "../../src/runtimes/openai-agents.ts";
import { repo } from "./run-cli.ts";

const clientsDir = join(process.env["LEVIATH_CACHE"] ?? join(homedir(), ".cache", "leviath"), "clients");

/** Installs `pkg@version` into the cache once (into a scratch dir, renamed into place when complete); returns its dir. */
function installOnce(name: string, pkg: string, version: string): string {
  const dir = join(clientsDir, `${name}-${version}`);
  if (existsSync(join(dir, "node_modules", ...pkg.split("/"), "package.json"))) return dir;
  const scratch = `${dir}.partial-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const npm = join(dirname(process.execPath), "npm");
  execFileSync(npm, ["install", "--prefix", scratch, "--no-save", "--no-audit", "--no-fund", "--no-package-lock", `${pkg}@${version}`], { stdio: "pipe", timeout: 600_000 });
  if (existsSync(dir)) rmSync(scratch, { recursive: true, force: true });
  else renameSync(scratch, dir);
  return dir;
}

/** A PATH with a client's bin dir first, then this Node's (the npm launchers are Node scripts), then the system's. */
const pathWith = (bin: string): string => [bin, dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":");

/** The Codex CLI (npm @openai/codex, its linux x64 binary in the optional package @openai/codex-linux-x64): a PATH with `codex`. */
export function installCodex(): string {
  return pathWith(join(installOnce("codex", "@openai/codex", CODEX_VERSION), "node_modules", ".bin"));
}

/** The Agents SDK beside our program (copied in, so its imports resolve there), as `leviath-openai-agents` on the PATH. */
export function installOpenAiAgents(): string {
  const dir = installOnce("openai-agents", "@openai/agents", OPENAI_AGENTS_VERSION);
  copyFileSync(repo("images/openai-agents/agent.mjs"), join(dir, "agent.mjs"));
  chmodSync(join(dir, "agent.mjs"), 0o755);
  mkdirSync(join(dir, "bin"), { recursive: true });
  const link = join(dir, "bin", OPENAI_AGENTS_COMMAND);
  if (!existsSync(link)) symlinkSync(join(dir, "agent.mjs"), link);
  return pathWith(join(dir, "bin"));
}

/** How a launched client ended. */
export interface LaunchOutcome {
  readonly code: number | string | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Writes the launch's files and runs its command in `cwd` with exactly its environment, stdin closed. */
export async function runLaunch(launch: Launch, cwd: string): Promise<LaunchOutcome> {
  for (const f of launch.files) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content, { mode: f.mode ?? 0o600 });
  }
  const proc = spawn(launch.command, [...launch.args], { cwd, env: { ...launch.env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | string | null>((resolve, reject) => {
    proc.once("error", reject);
    proc.once("close", (c, signal) => resolve(c ?? signal));
  });
  return { code, stdout, stderr };
}
