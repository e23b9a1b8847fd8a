// `kubectl leviath ...` (the `kubectl-leviath` executable, also `leviath kubectl ...`): the everyday questions
// about Runs, with only the user's kubeconfig and RBAC. Parses argv, connects, and hands each command its context.
import { DEFAULT_NAMESPACE } from "../../api/constants.ts";
import { getBuildInfo } from "../../config/build-info.ts";
import { createKubeClient, loadKubeConfig } from "../../kube/client.ts";
import { parseCommandArgs } from "../args.ts";
import { EXIT, UsageError, type CliIo } from "../io.ts";
import { APPROVE_HELP, parseDecision, runApprove } from "./approve.ts";
import { AUDIT_HELP, parseAuditOutput, runAudit } from "./audit.ts";
import { DESCRIBE_HELP, runDescribe } from "./describe.ts";
import { PENDING_HELP, runPending } from "./pending.ts";
import type { PluginContext } from "./plugin-context.ts";
import { parsePhase, RESULT_HELP, runResult, runWait, WAIT_HELP } from "./run-state.ts";
import { parseDuration } from "./table.ts";
import { parseSyntax, runWhy, WHY_HELP } from "./why.ts";

const COMMON_HELP = `
Connection (as kubectl's; nothing else is read):
  --kubeconfig FILE      the kubeconfig (default: KUBECONFIG, then ~/.kube/config)
  --context NAME         a context of it other than the current one
  -n, --namespace NAME   the namespace (default: the context's, else default)
  -h, --help             this help
`;

/** `kubectl leviath --help`. */
export const KUBECTL_HELP = `Usage: kubectl leviath <command> [options]

Leviath Runs from kubectl: find what a Run waits on, answer it, read its audit and its result. Install by
putting kubectl-leviath (bin/kubectl-leviath in a checkout) on your PATH.

Commands:
  pending [-A] [--watch]                 the prompts Runs wait on, with the id to answer
  approve RUN [PROMPT] --once|--stage|--run|--deny [--reason TEXT]
                                         answer a prompt with an Approval and wait for the outcome
  audit RUN [-f] [-o table|calls|json]   the Run's audit records, in order (-f: as they are written)
  result RUN                             the Run's result (status.result)
  wait RUN [--for PHASE] [--timeout D]   wait for a terminal phase; exit 0 only on Succeeded
  why RUN [CALL] [--syntax yaml|toml]    the rule that refused or asked a call, and the smallest change
                                         that would allow it
  describe RUN                           the Run on one screen: phase, conditions, prompts, decisions,
                                         result, last refusals

Exit status: 0 done, 1 refused or failed (named in one line), 2 usage.
Run 'kubectl leviath <command> --help' for a command's options; 'kubectl leviath --version' prints the version.
${COMMON_HELP}`;

const CONNECTION = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  namespace: { type: "string", short: "n" },
} as const;

const COMMANDS = {
  pending: { help: PENDING_HELP, options: { "all-namespaces": { type: "boolean", short: "A" }, watch: { type: "boolean", short: "w" } }, args: [0, 0] },
  approve: {
    help: APPROVE_HELP, args: [1, 2],
    options: { once: { type: "boolean" }, stage: { type: "boolean" }, run: { type: "boolean" }, deny: { type: "boolean" }, reason: { type: "string" }, timeout: { type: "string" }, "no-wait": { type: "boolean" } },
  },
  audit: { help: AUDIT_HELP, options: { output: { type: "string", short: "o" }, follow: { type: "boolean", short: "f" } }, args: [1, 1] },
  result: { help: RESULT_HELP, options: {}, args: [1, 1] },
  wait: { help: WAIT_HELP, options: { for: { type: "string" }, timeout: { type: "string" } }, args: [1, 1] },
  why: { help: WHY_HELP, options: { syntax: { type: "string" } }, args: [1, 2] },
  describe: { help: DESCRIBE_HELP, options: {}, args: [1, 1] },
} as const;

type CommandName = keyof typeof COMMANDS;
type Values = Record<string, string | boolean | undefined>;

function duration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`${flag} '${text}' is not a duration (30s, 5m, 1h, or seconds)`);
  return ms;
}

/** Checks the command's own flags, then connects (`open`) and runs it: a usage error never waits on the kubeconfig. */
function dispatch(name: CommandName, pos: string[], v: Values, open: () => PluginContext): Promise<number> {
  const str = (flag: string) => v[flag] as string | undefined;
  switch (name) {
    case "pending":
      return runPending(open(), { all: v["all-namespaces"] === true, watch: v["watch"] === true });
    case "approve": {
      const decision = parseDecision({ once: v["once"] === true, stage: v["stage"] === true, run: v["run"] === true, deny: v["deny"] === true });
      const timeoutMs = v["no-wait"] === true ? 0 : duration("--timeout", str("timeout")) ?? 30_000;
      return runApprove(open(), { run: pos[0]!, prompt: pos[1], decision, reason: str("reason"), timeoutMs });
    }
    case "audit": {
      const follow = v["follow"] === true;
      const output = parseAuditOutput(str("output"), follow);
      return runAudit(open(), { run: pos[0]!, output, follow });
    }
    case "result":
      return runResult(open(), pos[0]!);
    case "wait": {
      const phase = parsePhase(str("for"));
      const timeoutMs = duration("--timeout", str("timeout"));
      return runWait(open(), { run: pos[0]!, phase, timeoutMs });
    }
    case "why": {
      const syntax = parseSyntax(str("syntax"));
      return runWhy(open(), { run: pos[0]!, call: pos[1], syntax });
    }
    case "describe":
      return runDescribe(open(), pos[0]!);
  }
}

/** Builds the context from the connection flags: the kubeconfig, its context, the namespace. */
function connect(io: CliIo, v: Values): PluginContext {
  const kc = loadKubeConfig(v["kubeconfig"] as string | undefined, v["context"] as string | undefined);
  const client = createKubeClient(kc);
  return {
    io, client,
    namespace: (v["namespace"] as string | undefined) ?? client.namespace ?? DEFAULT_NAMESPACE,
    nowMs: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}

/** Run `kubectl leviath <argv>`; returns the exit status. */
export async function runKubectlPlugin(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    io.stdout(KUBECTL_HELP);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === "--version" || name === "version") {
    io.stdout(`kubectl-leviath ${getBuildInfo().version}\n`);
    return EXIT.ok;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    io.stderr(`kubectl leviath: unknown command '${name}'\n\n${KUBECTL_HELP}`);
    return EXIT.usage;
  }
  const command = COMMANDS[name as CommandName];
  try {
    const { values, positionals } = parseCommandArgs(rest, { ...CONNECTION, ...command.options });
    if (values.help) {
      io.stdout(command.help + COMMON_HELP);
      return EXIT.ok;
    }
    const [min, max] = command.args;
    if (positionals.length < min) throw new UsageError(min === 1 ? "RUN is required" : "missing arguments");
    if (positionals.length > max) throw new UsageError(`unexpected argument '${positionals[max]}'`);
    return await dispatch(name as CommandName, positionals, values as Values, () => connect(io, values as Values));
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`kubectl leviath ${name}: ${err.message}\n\n${command.help}`);
      return EXIT.usage;
    }
    // A refusal (PluginFailure), an API error (a 403, a webhook's denial), an unreachable server or a kubeconfig
    // that does not load: one line, exit 1, no stack.
    io.stderr(`kubectl leviath ${name}: ${(err as Error).message}\n`);
    return EXIT.refused;
  }
}
