// Third-party agent clients the tests run unmodified, installed from the npm registry at a pinned version into
// ~/.cache/leviath/clients/<name>-<version>/ once and reused (a stamp file marks a finished install). The product
// never ships them: a team installs the client into its own image (docs/runtimes.md); the tests do the same here.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** A client package at a pinned version and the executable it installs under node_modules/.bin. */
export interface ClientPackage {
  readonly name: string;
  readonly pkg: string;
  readonly version: string;
  readonly bin: string;
}

/** Claude Code, pinned: the version docs/runtimes.md's recipe installs. */
export const CLAUDE_CODE: ClientPackage = { name: "claude-code", pkg: "@anthropic-ai/claude-code", version: "2.1.332", bin: "claude" };

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
  if (existsSync(stamp) && existsSync(join(bin, client.bin))) return bin;
  log(`clients: installing ${client.pkg}@${client.version} into ${dir} (once)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync("npm", buildInstallArgs(client, dir), { stdio: ["ignore", "inherit", "inherit"] });
  if (!existsSync(join(bin, client.bin))) throw new Error(`${client.pkg}@${client.version} installed no ${client.bin} in ${bin}`);
  writeFileSync(stamp, `${client.pkg}@${client.version}\n`);
  return bin;
}
