// `leviath controller` as a process, for the tests that kill and restart it, until the top-level CLI routes the
// `controller` subcommand (then the tests run bin/leviath itself; see process-harness.ts).
import { homedir } from "node:os";
import { runController } from "../../../src/cli/controller.ts";

process.exitCode = await runController(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  cwd: process.cwd(),
  homedir: homedir(),
});
