// Composition root: the only place that wires the real world (argv, environment, stdio) to the CLI.
import { homedir } from "node:os";
import { runCli } from "./cli/run.ts";

function osHome(): string | undefined {
  try {
    return homedir() || undefined;
  } catch {
    return undefined;
  }
}

try {
  process.exitCode = await runCli(process.argv.slice(2), {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
    homedir: osHome(),
  });
} catch (err) {
  // A bug, not bad input: say so in one line and fail; the stack goes to stderr only when asked for.
  process.stderr.write(`leviath: internal error: ${(err as Error).message}\n`);
  if (process.env["LEVIATH_DEBUG"]) process.stderr.write(`${(err as Error).stack ?? ""}\n`);
  process.exitCode = 70;
}
