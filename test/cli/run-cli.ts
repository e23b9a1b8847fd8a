import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** What a `leviath` process printed and how it exited. */
export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Run the real `leviath` executable (bin/leviath) as a child process, `input` on its stdin. */
export function leviath(args: string[], opts: { cwd?: string; env?: Record<string, string | undefined>; input?: string } = {}): CliResult {
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const r = spawnSync(process.execPath, [`${ROOT}bin/leviath`, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: env as NodeJS.ProcessEnv,
    encoding: "utf8",
    // Without input, stdin is empty (never the test runner's): a command reading '-' gets end of file.
    input: opts.input ?? "",
    timeout: 20_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Absolute path of a file in the repository. */
export const repo = (p: string): string => `${ROOT}${p}`;
