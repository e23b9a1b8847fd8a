// What runs a call once its decision allowed it: one executor per executor kind of the built-in tool table
// (src/api/tools.ts: `file`, `shell`, `http`, `search`, `result`, `runtime`) and one for the admin's MCP servers (`gateway`). A
// built-in the sidecar executes needs its entry there and its executor here; nothing else branches on the tool.
import { findBuiltinTool, type ExecutorKind } from "../../api/tools.ts";
import { buildRefusalMessage } from "../../api/sidecar-contract.ts";
import type { Logger } from "../../log/logger.ts";
import type { SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { PathCheck } from "../../policy/call-paths.ts";
import { extractOutput, type ResultSink } from "../core/run-result.ts";
import type { ToolGateway } from "../core/tool-gateway.ts";
import type { ExecutionOutcome } from "./execution-outcome.ts";
import { executeFileTool, isFileTool, type FileToolArgs } from "./file-tools.ts";
import { runHttpTool, type OutboundSettings } from "./http-tools.ts";
import { runWebSearch } from "./web-search.ts";
import type { WebSearchSpec } from "../../api/leviath-policy.ts";
import { buildShellResultText, computeShellOutcome, type RunStage, type ShellExecutor } from "./shell.ts";

/** An executor's key: a built-in's executor kind, or the gateway for a tool of an admin's MCP server. */
export type ExecutorKey = ExecutorKind | "gateway";

/** One allowed call, as an executor gets it. */
export interface ExecutionRequest {
  readonly id: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  /** The current stage (where shell runs, what a result is stored under). */
  readonly stage: RunStage;
  readonly shellTimeoutSeconds: number;
  /** What the policy says about the HTTP tools (local addresses, their deadline). */
  readonly outbound: OutboundSettings;
  /** The paths as the decision resolved them: a file tool opens exactly these. */
  readonly paths: readonly PathCheck[] | undefined;
  /** The backend of web_search the policy names (absent: none; the call is then never allowed this far). */
  readonly webSearch?: WebSearchSpec | undefined;
}

/** Runs the calls of one executor kind. */
export interface Executor {
  /**
   * When the allow is recorded: `before` it runs (what it does cannot be undone, so an unrecorded decision never
   * runs), or `after` (a file tool: its open can still refuse the call, and the record then says so instead).
   */
  readonly records: "before" | "after";
  execute(req: ExecutionRequest): Promise<ExecutionOutcome>;
}

/** The executors by key. */
export type ExecutorTable = { readonly [K in ExecutorKey]: Executor };

/** What the executors reach. */
export interface ExecutorDeps {
  readonly shell: ShellExecutor;
  readonly metrics: SidecarMetrics;
  readonly log: Logger;
  /** The admin's MCP servers (absent: none declared). */
  readonly gateway?: ToolGateway | undefined;
  /** Where an allowed `submit_output` is stored as the Run's result (absent: nowhere). */
  readonly result?: ResultSink | undefined;
}

/** The key of the executor that runs a tool: the gateway's for its servers' names, a built-in's kind, else the runtime. */
export function pickExecutor(tool: string, gateway: ToolGateway | undefined): ExecutorKey {
  if (gateway?.claims(tool) === true) return "gateway";
  return findBuiltinTool(tool)?.executor ?? "runtime";
}

const fileExecutor: Executor = {
  records: "after",
  async execute(req) {
    // The decision resolves a file tool's paths: none here is a bug, never a call to let through.
    if (!isFileTool(req.tool) || req.paths === undefined) throw new Error(`file executor: '${req.tool}' came without its resolved paths`);
    const out = executeFileTool(req.tool, req.args as FileToolArgs[typeof req.tool], req.paths);
    return out.kind === "refused" ? { kind: "refused", code: out.refusal.code, message: out.refusal.message } : { kind: "done", result: out.result, isError: out.isError };
  },
};

function shellExecutor(d: ExecutorDeps): Executor {
  return {
    records: "before",
    async execute(req) {
      const timeoutSeconds = req.shellTimeoutSeconds;
      const r = await d.shell.run({ command: String(req.args["command"]), timeoutSeconds, stage: req.stage });
      d.metrics.shell(d.shell.label, computeShellOutcome(r));
      const text = buildShellResultText(r, timeoutSeconds);
      return { kind: "done", result: text.text, isError: text.isError, shell: { exitCode: r.exitCode, timedOut: r.timedOut } };
    },
  };
}

function resultExecutor(d: ExecutorDeps): Executor {
  return {
    records: "before",
    async execute(req) {
      if (d.result === undefined) return { kind: "handed-back" };
      // Stored before the runtime hears `run`: an answer it was told was handed over is on record.
      const stored = await d.result.store({ output: extractOutput(req.args), callId: req.id, stage: req.stage.name });
      if (stored.ok) return { kind: "handed-back" };
      d.log.error({ callId: req.id, err: stored.message }, "result could not be stored");
      return { kind: "refused", code: "result-not-stored", message: buildRefusalMessage("result-not-stored", req.tool) };
    },
  };
}

function gatewayExecutor(d: ExecutorDeps): Executor {
  return {
    records: "before",
    async execute(req) {
      const server = d.gateway?.find(req.tool)?.server;
      // Checked before the allow was recorded, in the same turn: only a bug reaches this.
      if (d.gateway === undefined || server === undefined) throw new Error(`gateway executor: no server offers '${req.tool}'`);
      const r = await d.gateway.call(req.tool, req.args);
      d.metrics.mcpCall(server, r.isError ? "error" : "ok");
      return { kind: "done", result: r.text, isError: r.isError };
    },
  };
}

function httpExecutor(d: ExecutorDeps): Executor {
  return {
    records: "before",
    async execute(req) {
      const r = await runHttpTool({ tool: req.tool, args: req.args, outbound: req.outbound });
      d.metrics.httpTool(req.tool, r.metric);
      return r.outcome;
    },
  };
}

function searchExecutor(d: ExecutorDeps): Executor {
  return {
    records: "before",
    async execute(req) {
      // Checked before the allow was recorded, in the same turn (isSearchBacked): only a bug reaches this.
      if (d.gateway === undefined || req.webSearch === undefined) throw new Error(`search executor: no backend for '${req.tool}'`);
      const r = await runWebSearch(d.gateway, req.webSearch, req.args, req.outbound.timeoutSeconds);
      d.metrics.mcpCall(req.webSearch.server, r.isError ? "error" : "ok");
      return { kind: "done", result: r.text, isError: r.isError };
    },
  };
}

const runtimeExecutor: Executor = { records: "before", execute: async () => ({ kind: "handed-back" }) };

/** The executors of one sidecar. */
export function buildExecutorTable(deps: ExecutorDeps): ExecutorTable {
  return { file: fileExecutor, shell: shellExecutor(deps), http: httpExecutor(deps), search: searchExecutor(deps), result: resultExecutor(deps), runtime: runtimeExecutor, gateway: gatewayExecutor(deps) };
}
