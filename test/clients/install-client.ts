// Third-party agent clients the tests run unmodified, installed from the npm registry at a pinned version into
// ~/.cache/leviath/clients/<name>-<version>/ once and reused (a stamp file marks a finished install). The product
// never ships them: a team installs the client into its own image (docs/runtimes.md); the tests do the same here.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join } from "node:path";
import { CODEX_VERSION } from "../../src/runtimes/codex.ts";
import { OPENAI_AGENTS_COMMAND, OPENAI_AGENTS_VERSION } from "../../src/runtimes/openai-agents.ts";

/** A client package at a pinned version and the executable it installs under node_modules/.bin. */
export interface ClientPackage {
  readonly name: string;
  readonly pkg: string;
  readonly version: string;
  readonly bin: string;
  /** A program of ours run on the package (its path in this repository), copied beside it and linked as `bin`. */
  readonly program?: string;
}

/** Claude Code, pinned: the version docs/runtimes.md's recipe installs. */
export const CLAUDE_CODE: ClientPackage = { name: "claude-code", pkg: "@anthropic-ai/claude-code", version: "2.1.332", bin: "claude" };

/** The Codex CLI, pinned (its linux x64 binary comes in the optional package @openai/codex-linux-x64). */
export const CODEX: ClientPackage = { name: "codex", pkg: "@openai/codex", version: CODEX_VERSION, bin: "codex" };

/** The OpenAI Agents SDK with our program on it (images/openai-agents/agent.mjs), as `leviath-openai-agents`. */
export const OPENAI_AGENTS: ClientPackage = { name: "openai-agents", pkg: "@openai/agents", version: OPENAI_AGENTS_VERSION, bin: OPENAI_AGENTS_COMMAND, program: "images/openai-agents/agent.mjs" };

/** Where the clients are cached (LEVIATH_CLIENTS_DIR, else ~/.cache/leviath/clients). */
export function clientsDir(): string {
  return process.env["LEVIATH_CLIENTS_DIR"] ?? join(homedir(), ".cache", "leviath", "clients");
}

/** The npm arguments that install the client into `dir`: the same ones images/<name>/Containerfile runs. */
export function buildInstallArgs(client: ClientPackage, dir: string): string[] {
  return ["install", "--prefix", dir, "--no-audit", "--no-fund", "--save-exact", `${client.pkg}@${client.version}`];
}

/** Installs the client unless a finished install is there; returns the directory holding its executable. */
export function ensureClient(client: ClientPackage, log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const dir = join(clientsDir(), `${client.name}-${client.version}`);
  const bin = join(dir, "node_modules", ".bin");
  const stamp = join(dir, ".leviath-installed");
  if (existsSync(stamp) && existsSync(join(placeProgram(client, dir, bin), client.bin))) return bin;
  log(`clients: installing ${client.pkg}@${client.version} into ${dir} (once)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync("npm", buildInstallArgs(client, dir), { stdio: ["ignore", "inherit", "inherit"] });
  placeProgram(client, dir, bin);
  if (!existsSync(join(bin, client.bin))) throw new Error(`${client.pkg}@${client.version} installed no ${client.bin} in ${bin}`);
  writeFileSync(stamp, `${client.pkg}@${client.version}\n`);
  return bin;
}

/** Copies the client's program of ours beside its package (each time: the repository's copy is the one tested) and links it into `bin`. */
function placeProgram(client: ClientPackage, dir: string, bin: string): string {
  if (client.program === undefined) return bin;
  const target = join(dir, basename(client.program));
  copyFileSync(new URL(`../../${client.program}`, import.meta.url), target);
  chmodSync(target, 0o755);
  mkdirSync(bin, { recursive: true });
  if (!existsSync(join(bin, client.bin))) symlinkSync(target, join(bin, client.bin));
  return bin;
}
