// Third-party agent clients the tests run unmodified, installed from the npm registry at a pinned version into
// ~/.cache/leviath/clients/<name>-<version>/ once and reused (a stamp file marks a finished install). The product
// never ships them: a team installs the client into its own image (docs/runtimes.md); the tests do the same here.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join } from "node:path";
import { CODEX_VERSION } from "../../src/runtime/adapters/codex.ts";
import { OPENAI_AGENTS_COMMAND, OPENAI_AGENTS_VERSION } from "../../src/runtime/adapters/openai-agents.ts";

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

/**
 * Installs the client unless a finished install is there; returns the directory holding its executable (for a
 * client with a program of ours, a directory of that program's copy alone).
 */
export function ensureClient(client: ClientPackage, log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const dir = join(clientsDir(), `${client.name}-${client.version}`);
  const bin = join(dir, "node_modules", ".bin");
  const stamp = join(dir, ".leviath-installed");
  if (existsSync(stamp)) {
    const placed = placeProgram(client, dir, bin);
    if (existsSync(join(placed, client.bin))) return placed;
  }
  log(`clients: installing ${client.pkg}@${client.version} into ${dir} (once)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync("npm", buildInstallArgs(client, dir), { stdio: ["ignore", "inherit", "inherit"] });
  const placed = placeProgram(client, dir, bin);
  if (!existsSync(join(placed, client.bin))) throw new Error(`${client.pkg}@${client.version} installed no ${client.bin} in ${placed}`);
  writeFileSync(stamp, `${client.pkg}@${client.version}\n`);
  return placed;
}

/**
 * Places the client's program of ours beside its package (so its imports resolve from the package's node_modules)
 * under a name made of its content's hash, linked as `bin` in a directory of its own: test runs of other
 * checkouts share the cache, and a copy of theirs never replaces this checkout's under a running test.
 */
function placeProgram(client: ClientPackage, dir: string, bin: string): string {
  if (client.program === undefined) return bin;
  const source = readFileSync(new URL(`../../${client.program}`, import.meta.url));
  const tag = createHash("sha256").update(source).digest("hex").slice(0, 16);
  const target = join(dir, `${tag}-${basename(client.program)}`);
  if (!existsSync(target)) {
    const partial = `${target}.${process.pid}.partial`;
    writeFileSync(partial, source, { mode: 0o755 });
    renameSync(partial, target);
  }
  const own = join(dir, `bin-${tag}`);
  mkdirSync(own, { recursive: true });
  try {
    symlinkSync(target, join(own, client.bin));
  } catch (err) {
    // Another test process linked the same copy first.
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  return own;
}
