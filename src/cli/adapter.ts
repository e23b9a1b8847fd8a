import { resolve } from "node:path";
import { buildTaskMessage, TASK_REGION } from "../runtime/reference/agent-run.ts";
import { createCredentialLookup, CREDENTIALS_DIR } from "../runtime/reference/provider-registry.ts";
import { buildRunPlan, type StagePlan } from "../runtime/reference/stage-plan.ts";
import { RESULT_TOOL } from "../api/tools.ts";
import { loadRuntimeConfig, type AgentRuntimeConfig } from "../config/runtime-config.ts";
import { RUNTIME_ADAPTERS, type RuntimeAdapter } from "../runtime/adapters/adapters.ts";
import type { LaunchContext } from "../runtime/adapters/launch.ts";
import { buildTemplateAdapter, MCP_COMMAND_KIND } from "../runtime/adapters/mcp-command.ts";
import { buildStageInstructions } from "../runtime/adapters/stage-steps.ts";
import type { SidecarClient } from "../runtime/sidecar-client.ts";
import type { RuntimeToken } from "../runtime/reference/runtime-token.ts";
import { runLaunch, writeLaunchFiles, type ProgramExit } from "./adapter-process.ts";
import { runStages } from "./adapter-stages.ts";
import { connectSidecar, createTerminationReport, DEFAULT_RUNTIME_CONFIG, readSidecarSettings } from "./agent.ts";
import { parseCommandArgs } from "./args.ts";
import { UsageError, type CliIo } from "./io.ts";
import { decideKeyDestination } from "../policy/credential-endpoints.ts";

/** `leviath adapter --help`. */
export const ADAPTER_HELP = `Usage: leviath adapter <kind> [options]

Starts a third-party agent client as a Run's runtime (docs/runtimes.md), configured so that every action it takes
goes through the sidecar's MCP endpoint (/mcp): its own tools off, its permission prompts off (the sidecar's
policy decides), the runtime token in a file under HOME (never on a command line), telemetry and auto-update off.
The controller makes it the agent container's command when the Agent's spec.runtime.kind is not leviath; the
Agent's image is built on the runtime image with the client installed, so both are on its PATH. With
LEVIATH_BINDING_FD set (a warm pool's pod, started before its Run), it first reads its Run's binding from that pipe
(docs/runtime.md, "A runtime started with its pool pod"), and exits 1 without one; the client starts after.

It labels the task, starts the client with the task, passes on SIGTERM, SIGINT and SIGHUP, and ends with the
client's exit status. A multi-stage Agent's client is started once per stage, with the stage's instructions: after
each exit the adapter reads the stage from the sidecar and goes on as the reference runtime would, or ends the run.
The client's final answer becomes the Run's result through the sidecar (submit_output), unless the model already
handed one over with submit_output.

Kinds: ${[...Object.keys(RUNTIME_ADAPTERS), "mcp-command"].join(", ")} (mcp-command: the LeviathPolicy's template the Agent
names, spec.runtimeTemplates)

Options:
      --runtime-config FILE  runtime.json (default: $LEVIATH_RUNTIME_CONFIG, else ${DEFAULT_RUNTIME_CONFIG})
      --sidecar URL          the sidecar (default: $LEVIATH_SIDECAR_URL, else http://127.0.0.1:7777)
      --token-file FILE      the sidecar's runtime token (default: $LEVIATH_SIDECAR_TOKEN_FILE)
      --credentials-dir DIR  where files credentials are mounted (default ${CREDENTIALS_DIR})
      --interaction-timeout-seconds N
                             the policy's interaction timeout (default 3600): the client waits 60 s longer on
                             one tool call, so a prompt can be answered
      --termination-log FILE where the outcome is written for the Run's status (default /dev/termination-log)
  -h, --help                 this text

Exit status: the client's (128 + N when signal N ended it); 1 the client ended without a final answer, or the
answer was refused or not stored; 2 a usage or configuration error; 127 the client is not on the PATH.
`;

const OPTIONS = {
  "runtime-config": { type: "string" },
  sidecar: { type: "string" },
  "token-file": { type: "string" },
  "credentials-dir": { type: "string" },
  "interaction-timeout-seconds": { type: "string" },
  "termination-log": { type: "string" },
} as const;

/** Seconds a client waits on a tool call beyond the policy's interaction timeout. */
const TOOL_TIMEOUT_MARGIN_SECONDS = 60;
/** The call id of the final answer the adapter hands over. */
const ANSWER_CALL_ID = "adapter-final-answer";

/** Run `leviath adapter <kind>`. */
export async function runAdapterCommand(argv: string[], io: CliIo): Promise<number> {
  const { values: v, positionals } = parseCommandArgs(argv, OPTIONS);
  if (v.help) {
    io.stdout(ADAPTER_HELP);
    return 0;
  }
  const [kind, extra] = positionals;
  if (kind === undefined) throw new UsageError("name the runtime kind");
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  const interaction = Number(v["interaction-timeout-seconds"] ?? "3600");
  if (!Number.isInteger(interaction) || interaction < 0) throw new UsageError(`--interaction-timeout-seconds '${v["interaction-timeout-seconds"]}' is not a whole number of seconds`);
  const abs = (p: string) => resolve(io.cwd, p);
  const say = createTerminationReport(io, abs(v["termination-log"] ?? "/dev/termination-log"), `leviath adapter ${kind}`);
  // An Agent of a kind this image's CLI has no adapter for: the Run ends, and its condition says why.
  if (!ADAPTER_KINDS.includes(kind)) return say(2, `no adapter for runtime kind '${kind}' (adapters: ${ADAPTER_KINDS.join(", ")})`);
  const loaded = loadRuntimeConfig(abs(v["runtime-config"] ?? io.env["LEVIATH_RUNTIME_CONFIG"] ?? DEFAULT_RUNTIME_CONFIG));
  if (!loaded.ok) return say(2, loaded.message);
  const adapter = resolveAdapter(kind, loaded.value);
  if (typeof adapter === "string") return say(2, adapter);
  const { tokenFile, sidecarUrl } = readSidecarSettings(v, io.env);
  const { link, token } = await connectSidecar(sidecarUrl, { path: abs(tokenFile), named: tokenFile });
  if (!token.ok) return say(1, token.message);
  try {
    return await runClient(kind, adapter, { io, v, config: loaded.value, link, sidecarUrl, token: token.value, interaction, say });
  } catch (err) {
    return say(failureCode(err), (err as Error).message);
  }
}

/** A launch the adapter refused for this start (an admin's template it cannot fill): a configuration error. */
class LaunchRefused extends Error {}

/** A refused launch ends the Run with 2, like an invalid runtime.json; any other failure with 1. */
const failureCode = (err: unknown): number => (err instanceof LaunchRefused ? 2 : 1);

/** The kinds this build has an adapter for: the built-in clients' and the admin's templates'. */
const ADAPTER_KINDS: readonly string[] = [...Object.keys(RUNTIME_ADAPTERS), MCP_COMMAND_KIND];

/** The adapter of `kind`: for mcp-command, the template pinned in runtime.json (none pinned: why, and the Run ends). */
function resolveAdapter(kind: string, config: AgentRuntimeConfig): RuntimeAdapter | string {
  if (kind !== MCP_COMMAND_KIND) return RUNTIME_ADAPTERS[kind as keyof typeof RUNTIME_ADAPTERS]!;
  if (config.template === undefined) return "runtime.json has no template: runtime kind mcp-command runs a template the LeviathPolicy declares (spec.runtimeTemplates), named by the Agent's spec.runtime.template";
  return buildTemplateAdapter(config.template);
}

/** Labels the task, runs the client stage by stage and hands its final answer over; a failure of the sidecar link throws. */
async function runClient(kind: string, adapter: RuntimeAdapter, at: RunAt): Promise<number> {
  const { io, v, config, link, sidecarUrl, say } = at;
  const abs = (p: string) => resolve(io.cwd, p);
  const inputs = Object.keys(config.inputs);
  await link.label([{ region: TASK_REGION, id: TASK_REGION, source: "input" }, ...inputs.map((name) => ({ region: name, id: name, source: "input" as const }))]);
  const plan = buildRunPlan(config.spec, config.runtime);
  const base = { io, provider: adapter.provider, sidecarUrl, toolTimeoutSeconds: at.interaction + TOOL_TIMEOUT_MARGIN_SECONDS, credentialsDir: abs(v["credentials-dir"] ?? CREDENTIALS_DIR) };
  const runOnce = async (stage: StagePlan, task: string): Promise<ProgramExit> => {
    // Each start of the client is configured with the token the file holds now: a sidecar restarted since wrote a new one.
    at.token.renew(undefined);
    const ctx = buildLaunchContext(config, { ...base, token: at.token.current(), stage, task, instructions: buildStageInstructions(plan, stage) });
    const refused = adapter.checkLaunch?.(ctx);
    if (refused !== undefined) throw new LaunchRefused(refused);
    const launch = adapter.buildLaunch(ctx);
    const written = writeLaunchFiles(launch, ctx.home);
    if (!written.ok) throw new Error(written.message);
    io.stdout(`[adapter] ${kind}: starting ${launch.command} in ${ctx.workdir}, stage '${stage.name}', sidecar ${sidecarUrl}/mcp, tool timeout ${ctx.toolTimeoutSeconds} s\n`);
    return runLaunch(launch, ctx.workdir, io.stderr);
  };
  const ended = await runStages({
    plan, adapter, link, task: buildTaskMessage(config.task, config.inputs), keep: new Set([TASK_REGION, ...inputs]),
    runOnce, describeExit: (exit) => describeExit(adapter, exit), log: (line) => io.stdout(`[adapter] ${line}\n`),
  });
  if (ended.kind === "failed") return say(ended.code, ended.message);
  if (ended.kind === "submitted") return say(0, `${adapter.program} finished; the output it submitted is the Run's result`);
  return say(...(await handOver(adapter, ended.exit, { link })));
}

/** What a started adapter works with. */
interface RunAt {
  readonly io: CliIo;
  readonly v: { "credentials-dir"?: string | undefined };
  readonly config: AgentRuntimeConfig;
  readonly link: SidecarClient;
  readonly sidecarUrl: string;
  readonly token: RuntimeToken;
  readonly interaction: number;
  readonly say: (exitCode: number, message: string) => number;
}

/** What the adapter knows of the Run, its pod and the stage, as a LaunchContext. */
function buildLaunchContext(config: AgentRuntimeConfig, at: { io: CliIo; provider: RuntimeAdapter["provider"]; sidecarUrl: string; token: string; toolTimeoutSeconds: number; credentialsDir: string; stage: StagePlan; task: string; instructions: string | undefined }): LaunchContext {
  const lookup = createCredentialLookup(at.io.env, at.credentialsDir);
  const model = at.stage.model.models.find((m) => m.provider === at.provider)?.model;
  const prefix = at.provider.toUpperCase();
  const runBaseUrl = config.runtime.providers?.[at.provider]?.baseUrl;
  const providerBaseUrl = runBaseUrl ?? lookup(`${prefix}_BASE_URL`);
  const keyName = `${prefix}_API_KEY`;
  const key = lookup(keyName);
  // The Run's own base URL gets the key only where the credentials tie it (policy/credential-endpoints.ts).
  const untied = runBaseUrl === undefined || key === undefined ? undefined
    : decideKeyDestination({ provider: at.provider, baseUrl: runBaseUrl, field: `runtime.providers.${at.provider}.baseUrl` }, config.credentialEndpoints);
  if (untied !== undefined) throw new LaunchRefused(`provider '${at.provider}': ${untied}`);
  return {
    sidecarUrl: at.sidecarUrl,
    token: at.token,
    home: at.io.env["HOME"] ?? "/tmp",
    workdir: at.io.cwd,
    task: at.task,
    ...(at.instructions ? { instructions: at.instructions } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(providerBaseUrl !== undefined ? { providerBaseUrl } : {}),
    toolTimeoutSeconds: at.toolTimeoutSeconds,
    env: { ...at.io.env, ...(key !== undefined ? { [keyName]: key } : {}) },
  };
}

/** Why the client's run is over without an answer to hand over, if it is. */
function describeExit(adapter: RuntimeAdapter, exit: ProgramExit): string | undefined {
  if (exit.spawnError !== undefined) {
    const missing = exit.spawnError.code === "ENOENT";
    return missing
      ? `'${adapter.program}' is not on the PATH: build the Agent's image on the runtime image with ${adapter.installs} installed (docs/runtimes.md)`
      : `could not start '${adapter.program}': ${exit.spawnError.message}`;
  }
  const after = exit.forwarded ? ` after ${exit.forwarded} (the Run was cancelled or reached its deadline)` : "";
  if (exit.signal !== null) return `${adapter.program} was ended by ${exit.signal}${after}`;
  if (after !== "") return `${adapter.program} exited with code ${exit.code}${after}`;
  if (exit.code === 0) return undefined;
  const answer = adapter.readAnswer(exit.stdout, exit.answerFile);
  const why = exit.stderrTail.trim() || (answer.ok ? "" : answer.message);
  return `${adapter.program} exited with code ${exit.code}${why ? `: ${why}` : ""}`;
}

/**
 * The client's final answer as the Run's result: as the reference runtime's, through `submit_output` at the
 * sidecar (so the taint gate and the audit see it). The stage loop has already seen that none was submitted.
 */
async function handOver(adapter: RuntimeAdapter, exit: ProgramExit, at: { link: SidecarClient }): Promise<[number, string]> {
  const answer = adapter.readAnswer(exit.stdout, exit.answerFile);
  if (!answer.ok) return [1, answer.message];
  let decided = await at.link.callTool({ id: ANSWER_CALL_ID, tool: RESULT_TOOL, args: { output: answer.answer } });
  while (decided.decision === "ask") decided = await at.link.waitForCall(ANSWER_CALL_ID, RESULT_TOOL, 30);
  if (decided.decision === "deny") return [1, `the final answer was not stored: ${decided.message}`];
  if (decided.decision !== "run") return [1, `the final answer was not stored: the sidecar answered ${decided.decision}`];
  return [0, `${adapter.program} finished; its final answer (${Buffer.byteLength(answer.answer)} bytes) is the Run's result`];
}
