import { getBuildInfo } from "../config/build-info.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

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
  agent                    the reference agent runtime: run an Agent's stages against a model, through the sidecar
  adapter <kind>           start a third-party agent client (claude-code, ...) as the runtime, through the sidecar's /mcp
  bound-exec -- CMD...     a warm pool pod's runtime wrapper: wait for the Run's binding, then start CMD with it
  model-server             a stand-in model (Anthropic and OpenAI APIs) from a YAML script or an echo, to try
                           Agents and clients without a provider key
  kubectl                  the kubectl plugin (kubectl leviath pending|approve|audit|result|wait|why|describe),
                           also bin/kubectl-leviath
  version                  print the version (also --version)

Files: our resources (an Agent, a LeviathPolicy: YAML or JSON, one of several documents, or in a List as
'kubectl get -o yaml' prints it) and upstream TOML (agent.leviath, config.toml, policy.toml, a directory of
*.cel rules) are accepted wherever an agent or a policy is asked for, told apart by content, so
'--config <(kubectl get leviathpolicy cluster -o yaml)' works; validate, paths and policy read '-' as stdin.
Advice names the fields of the file given: spec.toolPermissions.shell of a LeviathPolicy, [tool_permissions]
shell of config.toml.

Run 'leviath <command> --help' for a command's options.
`;

type Command = { help: string; run: (argv: string[], io: CliIo) => number | Promise<number> };

// Each command is imported only when it runs: the sidecar in its 256 Mi pod must not carry the controller, the
// importer or the Kubernetes client it never uses (about 60 MiB resident, measured in docs/benchmarks-history.md,
// "Sidecar memory under hostile sequences").
const COMMANDS: Record<string, () => Promise<Command>> = {
  validate: async () => import("./validate.ts").then((m) => ({ help: m.VALIDATE_HELP, run: m.runValidate })),
  paths: async () => import("./paths.ts").then((m) => ({ help: m.PATHS_HELP, run: m.runPaths })),
  policy: async () => import("./policy.ts").then((m) => ({ help: m.POLICY_HELP, run: m.runPolicy })),
  import: async () => import("./import.ts").then((m) => ({ help: m.IMPORT_HELP, run: m.runImport })),
  controller: async () => import("./controller.ts").then((m) => ({ help: m.CONTROLLER_HELP, run: m.runController })),
  sidecar: async () => import("./sidecar.ts").then((m) => ({ help: m.SIDECAR_HELP, run: m.runSidecar })),
  agent: async () => import("./agent.ts").then((m) => ({ help: m.AGENT_HELP, run: m.runAgentCommand })),
  adapter: async () => import("./adapter.ts").then((m) => ({ help: m.ADAPTER_HELP, run: m.runAdapterCommand })),
  "bound-exec": async () => import("./bound-exec.ts").then((m) => ({ help: m.BOUND_EXEC_HELP, run: m.runBoundExec })),
  "model-server": async () => import("./model-server.ts").then((m) => ({ help: m.MODEL_SERVER_HELP, run: m.runModelServer })),
  kubectl: async () => import("./kubectl/kubectl.ts").then((m) => ({ help: m.KUBECTL_HELP, run: m.runKubectlPlugin })),
};

/** The commands that are a runtime, and so may be started held on their binding. */
const HELD_RUNTIMES = new Set(["agent", "adapter"]);

/** `io` with the held binding's environment once it is read (unchanged when none is held), or why there is none. */
async function takeHeldBinding(io: CliIo): Promise<CliIo | Error> {
  const held = await import("../runtime/held-binding.ts");
  const fd = held.readBindingFd(io.env);
  if (fd === undefined) return io;
  if (fd instanceof Error) return fd;
  // While held: the HTTP client loaded and connected once (the unbound sidecar answers 503 not-bound, nothing of a Run).
  const sidecar = io.env["LEVIATH_SIDECAR_URL"];
  if (sidecar !== undefined && URL.canParse(sidecar)) void fetch(new URL("/v1/healthz", sidecar)).then((r) => r.arrayBuffer()).catch(() => undefined);
  const read = await held.readHeldBinding(fd);
  return read.ok ? { ...io, env: held.applyHeldBinding(io.env, read.value) } : new Error(read.message);
}

/** Run the CLI; returns the exit status. Errors in user input never escape as stack traces. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    io.stdout(TOP_HELP);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === "--version" || name === "version") {
    io.stdout(`leviath ${getBuildInfo().version}\n`);
    return EXIT.ok;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!load) {
    io.stderr(`leviath: unknown command '${name}'\n\n${TOP_HELP}`);
    return EXIT.usage;
  }
  const command = await load();
  // A runtime of ours started with its warm pool pod (LEVIATH_BINDING_FD set) goes on once it is bound, its module
  // already loaded (docs/runtime.md, "A runtime started with its pool pod").
  const bound = HELD_RUNTIMES.has(name) ? await takeHeldBinding(io) : io;
  if (bound instanceof Error) {
    io.stderr(`leviath ${name}: ${bound.message}; not starting\n`);
    return EXIT.refused;
  }
  try {
    return await command.run(rest, bound);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`leviath ${name}: ${err.message}\n\n${command.help}`);
      return EXIT.usage;
    }
    throw err;
  }
}
