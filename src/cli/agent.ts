import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { loadRuntimeConfig } from "../config/runtime-config.ts";
import { AGENT_EXIT, runAgent } from "../runtime/reference/agent-run.ts";
import { startRunTracing } from "../runtime/reference/run-tracing.ts";
import type { RunTracing } from "../runtime/reference/run-spans.ts";
import { Conversation } from "../runtime/reference/conversation.ts";
import { createCredentialLookup, createProviderRegistry, CREDENTIALS_DIR } from "../runtime/reference/provider-registry.ts";
import { buildRunPlan } from "../runtime/reference/stage-plan.ts";
import { createTranscript } from "../runtime/reference/transcript.ts";
import { createV1ToolClient } from "../runtime/reference/v1-tool-client.ts";
import { connectMcpTools } from "../runtime/reference/mcp-tool-client.ts";
import { createSidecarToolClient } from "../runtime/reference/sidecar-tool-client.ts";
import { createSidecarClient, type SidecarClient } from "../runtime/sidecar-client.ts";
import { createRuntimeToken, type RuntimeToken } from "../runtime/reference/runtime-token.ts";
import { parseCommandArgs } from "./args.ts";
import { UsageError, type CliIo } from "./io.ts";

/** `leviath agent --help`. */
export const AGENT_HELP = `Usage: leviath agent [options]

The reference agent runtime: runs the Agent's stages against a model provider, routing every tool call through
the sidecar beside it (docs/runtime.md). In an engine pod it needs no flags: the controller sets the environment.
With LEVIATH_BINDING_FD set (a warm pool's pod, started before its Run), it first reads its Run's binding from that
pipe to its end (docs/runtime.md, "A runtime started with its pool pod"), and exits 1 without one.

Per stage: the blueprint's system_prompt, the task and inputs, the stage's tools, max_iterations, its
transitions (the model picks one with next_stage; the runtime enters it with POST /v1/stage), and in an output
stage submit_output, which ends the run. The transcript goes to stdout, one line per step; file contents and
what the model wrote appear only with --log-level debug.

Options:
      --runtime-config FILE  runtime.json (default: $LEVIATH_RUNTIME_CONFIG, else /etc/leviath/runtime/runtime.json)
      --sidecar URL          the sidecar (default: $LEVIATH_SIDECAR_URL, else http://127.0.0.1:7777)
      --token-file FILE      the sidecar's runtime token (default: $LEVIATH_SIDECAR_TOKEN_FILE)
      --credentials-dir DIR  where files credentials are mounted (default ${CREDENTIALS_DIR})
      --termination-log FILE where the outcome is written for the Run's status (default /dev/termination-log,
                             skipped when it cannot be written)
      --tools mcp|v1         how tools are reached: mcp (default) lists and calls the sidecar's built-ins over
                             its MCP endpoint /mcp and any other tool the stage names over /v1; v1 uses /v1 only
      --log-level LEVEL      info (default) or debug
  -h, --help                 this text

Providers: a stage's model is { models = [{ provider, model }] } (or provider/model/fallbacks), tried in order;
the Run's runtime.model ("provider/model") overrides it. 'anthropic' speaks the Messages API, 'openai' and any
other name the Chat Completions API (runtime.providers.<name>.protocol changes it). The key is <NAME>_API_KEY
and the base URL runtime.providers.<name>.baseUrl or <NAME>_BASE_URL, from the environment or a credentials
file; the blueprint never chooses where requests go. A key goes to runtime.providers.<name>.baseUrl only where
every credential Secret ties it (annotation leviath.dev/credential-endpoints, pinned in runtime.json as
credentialEndpoints); otherwise that provider is refused and no request is sent.

Tracing: with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set (the chart's tracing.endpoint; a URL without a path gets
/v1/traces), the run is an 'invoke_agent' span and each model call a 'chat <model>' span (provider, model, tokens,
finish reason; never the messages), exported over OTLP/HTTP, and every tool call carries the run's W3C traceparent
to the sidecar, whose 'execute_tool' spans join the same trace (docs/tracing.md). Unset: no tracer at all.

Exit status: 0 the run succeeded (output submitted, or the last stage ended with no output stage), 1 it failed
(a model or the sidecar failed, max_iterations, no output), 2 a usage or configuration error, 3 the spawn failed
(a region's seed refused by the read-path fence, or a required region left empty), 143 SIGTERM.
`;

const OPTIONS = {
  "runtime-config": { type: "string" },
  sidecar: { type: "string" },
  "token-file": { type: "string" },
  "credentials-dir": { type: "string" },
  "termination-log": { type: "string" },
  "log-level": { type: "string" },
  tools: { type: "string" },
} as const;

/** The default place of runtime.json in an engine pod. */
export const DEFAULT_RUNTIME_CONFIG = "/etc/leviath/runtime/runtime.json";
/** The sidecar's loopback address in an engine pod. */
const DEFAULT_SIDECAR_URL = "http://127.0.0.1:7777";
/** How long the runtime waits for the sidecar to become healthy. */
const HEALTH_WAIT_MS = 120_000;

/** Run `leviath agent`. */
export async function runAgentCommand(argv: string[], io: CliIo): Promise<number> {
  const { values: v, positionals } = parseCommandArgs(argv, OPTIONS);
  if (v.help) {
    io.stdout(AGENT_HELP);
    return AGENT_EXIT.succeeded;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const { level, toolsVia } = readModes(v);
  const abs = (p: string) => resolve(io.cwd, p);
  const say = createTerminationReport(io, abs(v["termination-log"] ?? "/dev/termination-log"));
  const loaded = loadRuntimeConfig(abs(v["runtime-config"] ?? io.env["LEVIATH_RUNTIME_CONFIG"] ?? DEFAULT_RUNTIME_CONFIG));
  if (!loaded.ok) return say(AGENT_EXIT.usage, loaded.message);
  const config = loaded.value;
  const { tokenFile, sidecarUrl } = readSidecarSettings(v, io.env);
  const tracing = await traceRun(io.env, config.spec.agent.name);
  const { link, token } = await connectSidecar(sidecarUrl, { path: abs(tokenFile), named: tokenFile }, tracing.headers);
  if (!token.ok) return say(AGENT_EXIT.failed, token.message);
  const transcript = createTranscript(io.stdout, level);
  const plan = buildRunPlan(config.spec, config.runtime);
  const registry = createProviderRegistry({
    configs: config.runtime.providers ?? {}, lookup: createCredentialLookup(io.env, abs(v["credentials-dir"] ?? CREDENTIALS_DIR)), credentialEndpoints: config.credentialEndpoints,
  });
  const providers = tracing.providers(registry);
  transcript.line(`[run] task: ${Buffer.byteLength(config.task ?? "")} bytes, inputs: ${Object.keys(config.inputs).join(", ") || "none"}, mode ${config.mode}, sidecar ${link.baseUrl}`);
  let tools;
  try {
    tools = toolsVia === "v1" ? createV1ToolClient(link) : createSidecarToolClient(link, await connectMcpTools(sidecarUrl, token.value, { waitHealthy: () => link.waitHealthy(HEALTH_WAIT_MS), traceMeta: tracing.headers }));
  } catch (err) {
    return say(AGENT_EXIT.failed, `the sidecar's MCP endpoint at ${sidecarUrl}/mcp: ${(err as Error).message}`);
  }
  const controller = new AbortController();
  // A cancellation or the Run's deadline: the kubelet sends SIGTERM. As PID 1 the process must handle it itself.
  process.once("SIGTERM", () => {
    controller.abort(new Error("SIGTERM"));
    say(143, "stopped by SIGTERM (the Run was cancelled or reached its deadline)");
    process.exit(143);
  });
  const outcome = await runAgent({
    plan, task: config.task, inputs: config.inputs, link, transcript, providers, signal: controller.signal,
    tools,
    conversation: new Conversation(config.runtime.maxContextChars),
  });
  await tracing.end(outcome.exitCode, outcome.message);
  return say(outcome.exitCode, outcome.message);
}

/** The run's spans when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names an endpoint (a malformed one is a usage error), else none. */
async function traceRun(env: CliIo["env"], agent: string | undefined): Promise<RunTracing> {
  const tracing = await startRunTracing(env, { agent: agent ?? "agent", run: env["LEVIATH_RUN"], namespace: env["LEVIATH_NAMESPACE"] });
  if (typeof tracing === "string") throw new UsageError(tracing);
  return tracing;
}

/** Where the sidecar is and the runtime token file, from the flags or the engine pod's environment. */
export function readSidecarSettings(v: { "token-file"?: string | undefined; sidecar?: string | undefined }, env: CliIo["env"]): { tokenFile: string; sidecarUrl: string } {
  const tokenFile = v["token-file"] ?? env["LEVIATH_SIDECAR_TOKEN_FILE"];
  if (tokenFile === undefined) throw new UsageError("no runtime token file: pass --token-file or set LEVIATH_SIDECAR_TOKEN_FILE");
  return { tokenFile, sidecarUrl: v.sidecar ?? env["LEVIATH_SIDECAR_URL"] ?? DEFAULT_SIDECAR_URL };
}

/** `--log-level` and `--tools`, checked. */
function readModes(v: { "log-level"?: string | undefined; tools?: string | undefined }): { level: "info" | "debug"; toolsVia: "mcp" | "v1" } {
  const level = v["log-level"] ?? "info";
  if (level !== "info" && level !== "debug") throw new UsageError(`--log-level '${level}' is not info or debug`);
  const toolsVia = v.tools ?? "mcp";
  if (toolsVia !== "mcp" && toolsVia !== "v1") throw new UsageError(`--tools '${toolsVia}' is not mcp or v1`);
  return { level, toolsVia };
}

/** Ends the run with an exit code: the message to the termination log (the Run's Completed condition reads it), and to stderr on failure. */
export function createTerminationReport(io: CliIo, terminationLog: string, who = "leviath agent"): (exitCode: number, message: string) => number {
  return (exitCode, message) => {
    try {
      writeFileSync(terminationLog, message.slice(0, 4000));
    } catch { /* no termination log outside a pod */ }
    if (exitCode !== 0) io.stderr(`${who}: ${message}\n`);
    return exitCode;
  };
}

/**
 * The link to the sidecar and the runtime token, once the sidecar is healthy: the link reads the token file again
 * whenever the sidecar refuses the token (a restarted sidecar wrote a new one), and so does the MCP connection given
 * `token.value` (docs/runtime.md, "What the runtime must do").
 */
export async function connectSidecar(sidecarUrl: string, file: { path: string; named: string }, traceHeaders?: Readonly<Record<string, string>>): Promise<{ link: SidecarClient; token: { ok: true; value: RuntimeToken } | { ok: false; message: string } }> {
  // The link exists before the token (it waits for the sidecar's health, which needs none).
  const held: { token?: RuntimeToken } = {};
  const link: SidecarClient = createSidecarClient({
    baseUrl: sidecarUrl,
    refreshToken: (refused) => held.token?.renew(refused),
    // A restarting sidecar refuses connections until it listens again (its new token written first).
    whenRefused: () => link.waitHealthy(HEALTH_WAIT_MS),
    traceHeaders,
  });
  const read = await readSidecarToken(link, file);
  if (!read.ok) return { link, token: read };
  held.token = createRuntimeToken(file.path, read.value);
  return { link, token: { ok: true, value: held.token } };
}

/** Waits for the sidecar, then reads the runtime token and gives it to the link; or why it could not. */
export async function readSidecarToken(link: SidecarClient, file: { path: string; named: string }): Promise<{ ok: true; value: string } | { ok: false; message: string }> {
  try {
    await link.waitHealthy(HEALTH_WAIT_MS);
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  let token: string;
  try {
    token = readFileSync(file.path, "utf8").trim();
  } catch (err) {
    return { ok: false, message: `the runtime token file ${file.named}: ${(err as Error).message}` };
  }
  link.setToken(token);
  return { ok: true, value: token };
}
