// The sidecar's two per-start secrets and where they live. The runtime token authenticates the runtime to the
// API; the approval token (standalone) is the person who answers prompts. Neither is ever printed or put on a
// command line: each is a 0600 file in the sidecar's own directory (or where the operator says), which the
// agent's file tools cannot reach (refused at start) and its commands cannot see (local-confinement.ts).
import { randomBytes } from "node:crypto";
import { closeSync, constants, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { LocalApprovals } from "../sidecar/http/app-deps.ts";
import { UsageError, type CliIo } from "./io.ts";

/** The file names of the secrets in `<audit dir>/<run>/`. */
export const SECRET_FILES = { runtime: "runtime-token", approval: "approval-token" } as const;

/** A new secret: 32 random bytes, hex. */
export function newSecret(): string {
  return randomBytes(32).toString("hex");
}

/** Writes a secret to a new 0600 file (replacing any), never through a symlink: a temporary, then a rename. */
export function writeSecretFile(path: string, secret: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${secret}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** The runtime token, written to `file` (default `<runDir>/runtime-token`). */
export function prepareRuntimeToken(io: CliIo, file: string | undefined, runDir: string): { token: string; path: string } {
  const path = file === undefined ? join(runDir, SECRET_FILES.runtime) : resolve(io.cwd, file);
  const token = newSecret();
  try {
    writeSecretFile(path, token);
  } catch (err) {
    throw new UsageError(`--runtime-token-file '${path}' cannot be written: ${(err as Error).message}`);
  }
  return { token, path };
}

/** Who answers prompts over HTTP: nobody in a cluster; standalone, the holder of the approval token file. */
export function prepareApprovals(io: CliIo, file: string | undefined, runDir: string, cluster: boolean): { approvals: LocalApprovals; path?: string; created: boolean } {
  if (cluster) return { approvals: { mode: "disabled" }, created: false };
  if (file === undefined) {
    const path = join(runDir, SECRET_FILES.approval);
    const token = newSecret();
    writeSecretFile(path, token);
    return { approvals: { mode: "token", token }, path, created: true };
  }
  const path = resolve(io.cwd, file);
  let token: string;
  try {
    token = readFileSync(path, "utf8").trim();
  } catch {
    throw new UsageError(`--approval-token-file '${file}' cannot be read`);
  }
  if (token.length < 16) throw new UsageError(`--approval-token-file '${file}' holds fewer than 16 characters`);
  return { approvals: { mode: "token", token }, path, created: false };
}
