// Composition root: the only place that wires the real world (argv, environment, stdio) to the CLI.
import { homedir } from "node:os";
import { runCli } from "./cli/dispatch.ts";

function osHome(): string | undefined {
  try {
    return homedir() || undefined;
  } catch {
    return undefined;
  }
}

// A reader that goes away (`leviath … | head -1`) ends the output, not the program with a stack trace: the
// rest would be lost anyway, so the command stops quietly as a Unix filter does. Any other write error is real.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    process.exit(process.exitCode ?? 0);
  });
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
