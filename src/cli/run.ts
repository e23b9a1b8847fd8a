import { CONTROLLER_HELP, runController } from "./controller.ts";
import { IMPORT_HELP, runImport } from "./import.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { PATHS_HELP, runPaths } from "./paths.ts";
import { POLICY_HELP, runPolicy } from "./policy.ts";
import { runSidecar, SIDECAR_HELP } from "./sidecar.ts";
import { runValidate, VALIDATE_HELP } from "./validate.ts";

/** `leviath --help`. */
export const TOP_HELP = `Usage: leviath <command> [options]

The Leviath security model (read paths, tool permissions, taint tracking, sandboxes) for Kubernetes.

Commands:
  validate <agent>         check a blueprint against the admin's policy, as upstream's lev validate
  paths test <path>        would this agent's read of this path be allowed, on the real file system, and why
  policy list|add|test     the taint gate's allowlist rules and CEL rules, and a dry run of the gate
  import <file>            print the Agent or LeviathPolicy YAML for upstream agent.leviath / config.toml
  controller               run the operator: reconcile Agents, Runs and the LeviathPolicy into sandbox pods
  sidecar                  decide and enforce every tool call of an agent runtime (HTTP on loopback)

Files: upstream TOML (agent.leviath, config.toml, policy.toml, a directory of *.cel rules) and our YAML
resources (Agent, LeviathPolicy) are accepted wherever a file is asked for.

Run 'leviath <command> --help' for a command's options.
`;

type Command = { help: string; run: (argv: string[], io: CliIo) => number | Promise<number> };

const COMMANDS: Record<string, Command> = {
  validate: { help: VALIDATE_HELP, run: runValidate },
  paths: { help: PATHS_HELP, run: runPaths },
  policy: { help: POLICY_HELP, run: runPolicy },
  import: { help: IMPORT_HELP, run: runImport },
  controller: { help: CONTROLLER_HELP, run: runController },
  sidecar: { help: SIDECAR_HELP, run: runSidecar },
};

/** Run the CLI; returns the exit status. Errors in user input never escape as stack traces. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    io.stdout(TOP_HELP);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr(`leviath: unknown command '${name}'\n\n${TOP_HELP}`);
    return EXIT.usage;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`leviath ${name}: ${err.message}\n\n${command.help}`);
      return EXIT.usage;
    }
    throw err;
  }
}
