// The sidecar's core as its front-ends see it (DESIGN.md §4): a call is submitted (admitted here: a retried id,
// the pending budget, its arguments), taken through the pipeline (core/call-pipeline.ts: decide → record →
// execute, or ask), and its answer is read, waited for, withdrawn when its client gives up, or its result
// reported back by the runtime (and labelled). Transport-free: the answers are outcomes, never HTTP statuses.
import { hash } from "node:crypto";
import type { ApprovalDecision } from "../../api/approval.ts";
import type { RunResult } from "../../api/status.ts";
import type { DecisionSourceLabel } from "../../metrics/sidecar-metrics.ts";
import type { Level } from "../../policy/levels.ts";
import { extractTarget } from "../../policy/targets.ts";
import { buildRefusalBody, buildRefusalMessage, lookupRefusalSource, type EntryRef } from "../../api/sidecar-contract.ts";
import type { StageMoveSource } from "../../api/decision-sources.ts";
import { buildExecutorTable, type ExecutorTable } from "../executors/executor-table.ts";
import type { RunStage, ShellExecutor } from "../executors/shell.ts";
import type { PathFs } from "../../policy/read-paths/index.ts";
import type { ApprovalBook } from "./approvals.ts";
import { parseToolArgs } from "./call-inputs.ts";
import { buildDeny, type CallOutcome } from "./call-outcomes.ts";
import { CallPipeline, labelToolResult } from "./call-pipeline.ts";
import { hasGivenUp, type CallRecord, type CallRecords, type GiveUpReason } from "./call-records.ts";
import { computeCurrentStage, findStageIndex, listStageTargets, type Enforcement } from "./enforcement.ts";
import { Ledger, type LedgerDeps } from "./ledger.ts";
import type { RunSession } from "./run-session.ts";
import { measureOversizedResult, type ResultSink } from "./run-result.ts";
import type { ToolGateway } from "./tool-gateway.ts";
import type { TraceParent } from "../../tracing/trace-context.ts";
import { openCallSpan } from "./call-span-state.ts";
import type { PolicyRollout } from "./policy-rollout.ts";

/** What the service needs from the outside world (the ledger's sinks and budgets among them). */
export interface ToolCallServiceDeps extends Omit<LedgerDeps, "stageIndex"> {
  /** The canonical workdir. */
  readonly workdir: string;
  readonly fs: PathFs;
  readonly session: RunSession;
  readonly approvals: ApprovalBook;
  readonly shell: ShellExecutor;
  /** The admin's MCP servers (absent: none declared). */
  readonly gateway?: ToolGateway | undefined;
  /** Where an allowed `submit_output` is stored as the Run's result (absent: nowhere, as before). */
  readonly result?: ResultSink;
  /** Where decisions are recorded (absent: a ledger of its own over `audit`, `metrics` and `log`, within the budgets). */
  readonly ledger?: Ledger;
  /** What runs an allowed call, by executor kind (absent: the table over `shell`, `gateway` and `result`). */
  readonly executors?: ExecutorTable;
  /** A policy rollout reaching this Run (absent: none). */
  readonly rollout?: PolicyRollout | undefined;
}

/** One call as the runtime sends it. */
export interface ToolCallRequest {
  readonly id: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly entry?: EntryRef | undefined;
  /** Milliseconds since the epoch after which the client no longer waits (and was told the call did not run). */
  readonly deadline?: number | undefined;
  /**
   * Whether the caller can execute a tool the sidecar hands back (`run`). MCP cannot: a tool the sidecar does not
   * settle itself is then refused `tool-unavailable`, decided and recorded here like any refusal. Default true.
   */
  readonly callerRuns?: boolean | undefined;
  /** The W3C trace context its request carried (`traceparent`): its span continues that trace when tracing is on. */
  readonly trace?: TraceParent | undefined;
}

/** A call whose request does not parse: its id and tool as sent (any JSON value), and the refusal's message. */
export interface MalformedCall {
  readonly id: unknown;
  readonly tool: unknown;
  readonly message: string;
}

/** Most characters of a malformed call's id or tool name kept in its record. */
const MALFORMED_FIELD_CHARS = 256;

/** A malformed call's id or tool name as its record shows it: a string as sent, anything else as JSON; cut short. */
export function describeMalformedField(value: unknown): string {
  const text = typeof value === "string" ? value : value === undefined ? "" : (JSON.stringify(value) ?? typeof value);
  return text.length > MALFORMED_FIELD_CHARS ? `${text.slice(0, MALFORMED_FIELD_CHARS)}…` : text;
}

/** The default region of a tool result in the runtime's context. */
export const DEFAULT_RESULT_REGION = "conversation";

/** A stage move's outcome: where the run is now, or why it did not move. */
export type StageMove =
  | { readonly ok: true; readonly stage: string; readonly index: number; readonly changed: boolean }
  | { readonly ok: false; readonly code: "unknown-stage" | "transition-not-allowed"; readonly message: string };

/** Decides, executes and remembers the tool calls of one run. */
export class ToolCallService {
  readonly #d: ToolCallServiceDeps;
  readonly #calls: CallRecords;
  readonly #ledger: Ledger;
  readonly #pipeline: CallPipeline;
  readonly #stageListeners = new Set<() => void>();

  /** A service over its dependencies. */
  constructor(deps: ToolCallServiceDeps) {
    this.#d = deps;
    this.#ledger = deps.ledger ?? new Ledger({ ...deps, stageIndex: () => deps.session.stageIndex });
    this.#calls = this.#ledger.calls;
    this.#pipeline = new CallPipeline({ ...deps, ledger: this.#ledger, executors: deps.executors ?? buildExecutorTable(deps) });
  }

  /** The Run's result, once an allowed `submit_output` was stored. */
  get result(): RunResult | undefined {
    return this.#d.result?.current();
  }

  /** Counts of decisions by source since the sidecar started. */
  get decisionCounts(): ReadonlyMap<DecisionSourceLabel, number> {
    return this.#ledger.counts;
  }

  /** The enforcement in force. */
  policy(): Enforcement {
    return this.#d.policy();
  }

  /** The admin's MCP servers, if any. */
  get gateway(): ToolGateway | undefined {
    return this.#d.gateway;
  }

  /** The current stage of the run policy in force. */
  currentStage(enf: Enforcement = this.#d.policy()): { index: number; stage: RunStage } {
    return computeCurrentStage(enf, this.#d.session.stageIndex);
  }

  /**
   * Moves the run to stage `to`: the runtime's `POST /v1/stage` (`by: "runtime"`: the stage it is in, or a target
   * of one of its declared transitions, or the next stage where it declares none), or the model's `next_stage` over
   * MCP (`by: "llm_choice"`, `allowed` the stages the current one leads to by the model's choice). Any other stage
   * is refused `transition-not-allowed`, recorded. A move ends the stage-scoped grants (the session's), is a
   * `stage` record in the audit of the stage entered (an unwritable record refuses nothing already done) and is
   * told to the stage listeners.
   */
  moveStage(to: string, by: { readonly kind: Exclude<StageMoveSource, "transition">; readonly callId: string; readonly allowed?: readonly string[] }): StageMove {
    const enf = this.#d.policy();
    const current = this.currentStage(enf);
    const from = current.stage.name;
    const fields = { timestamp: Math.floor(this.#d.clock() / 1000), agent_id: this.#d.runName, call_id: by.callId, tool_name: by.kind === "llm_choice" ? "next_stage" : "stage", from_stage: from };
    // The runtime may stay where it is (entering the stage it is in) or follow one of the stage's declared edges.
    const allowed = by.kind === "runtime" ? (to === from ? undefined : listStageTargets(enf.runPolicy, current.index)) : by.allowed;
    const index = findStageIndex(enf.runPolicy, to);
    // A name the policy lacks is the runtime's mistake (404); the model choosing one is a refused transition, recorded.
    if (index === -1 && by.kind === "runtime") return { ok: false, code: "unknown-stage", message: buildRefusalMessage("unknown-stage", to) };
    if (allowed !== undefined && !allowed.includes(to)) {
      const refused = buildRefusalBody("transition-not-allowed", to, from, allowed.join(", ") || "none: a terminal stage");
      this.#ledger.record({ ...fields, stage: from, decision: "deny", decision_source: lookupRefusalSource(refused.code), code: refused.code });
      return { ok: false, code: refused.code, message: refused.message };
    }
    if (index === -1) return { ok: false, code: "unknown-stage", message: buildRefusalMessage("unknown-stage", to) };
    const changed = this.#d.session.setStage(index);
    if (changed) {
      this.#ledger.record({ ...fields, stage: to, decision: "stage", decision_source: by.kind });
      for (const listener of this.#stageListeners) listener();
    }
    return { ok: true, stage: to, index, changed };
  }

  /** Calls `listener` after every move that changed the stage (the MCP front-end's `tools/list_changed`); returns its removal. */
  onStageMoved(listener: () => void): () => void {
    this.#stageListeners.add(listener);
    return () => void this.#stageListeners.delete(listener);
  }

  /** Decides (and for file tools and shell, executes) one call. A retried id returns the call's current answer. */
  async submit(req: ToolCallRequest): Promise<CallOutcome> {
    const json = JSON.stringify([req.tool, req.args]);
    // One-shot: no Hash object per call (the same digest as createHash's).
    const fingerprint = hash("sha256", json, "base64");
    const existing = this.#calls.get(req.id);
    if (existing !== undefined) {
      if (existing.fingerprint !== fingerprint) return buildDeny(req.id, req.tool, "duplicate-call-id", req.id);
      if (existing.response !== undefined) return existing.response;
      // Still being decided or executed: the retry gets the same answer, and nothing runs twice.
      if (existing.first !== undefined) return existing.first;
    }
    this.#calls.forgetOld();
    const full = this.#calls.pendingFull(json.length);
    const parsed = parseToolArgs(req.tool, req.args);
    const rec = this.#admit(req, fingerprint, json.length, parsed.ok ? parsed.value : req.args);
    const ledger = this.#ledger;
    if (full) return ledger.deny(rec, "pending-full", rec.tool, this.#calls.maxPendingCalls);
    if (hasGivenUp(rec, this.#d.clock())) return ledger.deny(rec, "client-gave-up", rec.tool);
    if (!parsed.ok) return ledger.deny(rec, "invalid-arguments", req.tool, parsed.detail);
    const tooLarge = measureOversizedResult(req.tool, parsed.value);
    if (tooLarge !== undefined) return ledger.deny(rec, "result-too-large", req.tool, tooLarge);
    const first = this.#pipeline.advance(rec);
    if (rec.response === undefined) rec.first = first;
    return first;
  }

  /**
   * Refuses a call whose request does not parse (`invalid-call`: no id, a tool name that is not a string, arguments
   * that are not an object, a malformed deadline): one audit record and one count under `invalid_arguments`, like
   * every refusal of a call. Nothing of it runs, and it is not remembered (there is no call a retry could find).
   */
  refuseMalformed(req: MalformedCall): CallOutcome {
    const rec = this.#buildRecord({ id: describeMalformedField(req.id), tool: describeMalformedField(req.tool), args: {} }, "", 0, {});
    // Settled from the start: never counted as pending, never in the call table.
    rec.done = true;
    return this.#ledger.refuse(rec, "invalid-call", req.message);
  }

  /** Remembers a new call, pending. */
  #admit(req: ToolCallRequest, fingerprint: string, size: number, args: Record<string, unknown>): CallRecord {
    const rec = this.#buildRecord(req, fingerprint, size, args);
    this.#calls.add(rec);
    return rec;
  }

  /** A new call's record, pending. */
  #buildRecord(req: ToolCallRequest, fingerprint: string, size: number, args: Record<string, unknown>): CallRecord {
    return {
      id: req.id, seq: this.#calls.nextSeq(), tool: req.tool, fingerprint, size, args, target: extractTarget(req.tool, args, this.#d.policy().gatePolicy.overrides.get(req.tool)?.target),
      entry: req.entry ?? { region: DEFAULT_RESULT_REGION, id: req.id },
      permissionApproved: false, permissionDone: false, gateDone: false, gateSource: "taint_disabled",
      started: this.#d.monotonicMs(), response: undefined, first: undefined, done: false, waiters: undefined, chars: 0,
      deadline: req.deadline, callerRuns: req.callerRuns ?? true, span: req.trace === undefined ? undefined : openCallSpan(req.trace),
    };
  }

  /** The current answer of a call. */
  get(id: string): CallOutcome | undefined {
    return this.#calls.get(id)?.response;
  }

  /** The call's answer once it changes (a prompt answered, a new prompt raised) or after `ms`. */
  wait(id: string, ms: number): Promise<CallOutcome | undefined> {
    return this.#calls.wait(id, ms);
  }

  /**
   * Withdraws a call whose client gave up (a cancelled MCP request, a closed session or connection): a prompt it
   * waits on is closed and the call refused `client-gave-up` (one audit record, one metric); a call still being
   * decided is refused before it runs. False when there is nothing left to withdraw (unknown, settled).
   */
  withdraw(id: string, reason: GiveUpReason): boolean {
    const rec = this.#calls.get(id);
    return rec !== undefined && this.#pipeline.continuation.withdraw(rec, reason);
  }

  /**
   * A client's word that it waits for the call until `deadline` (milliseconds since the epoch, a `/v1` wait's
   * `leviath-deadline`): if the call is still unsettled then and no later wait renewed it, it is withdrawn.
   */
  renewDeadline(id: string, deadline: number): void {
    const rec = this.#calls.get(id);
    if (rec !== undefined) this.#pipeline.continuation.renewDeadline(rec, deadline);
  }

  /** Whether a prompt is still waiting for its answer (false once answered, expired, withdrawn or unknown). */
  isPromptPending(approvalId: string): boolean {
    return this.#d.approvals.get(approvalId) !== undefined;
  }

  /** Answers a pending prompt; false when none has this id. */
  answer(approvalId: string, decision: ApprovalDecision, reason?: string, approvedBy?: string): boolean {
    return this.#d.approvals.answer(approvalId, decision, reason, approvedBy);
  }

  /** Labels the result the runtime reports for a call decided `run`. */
  reportResult(id: string, entry: EntryRef | undefined, content?: string): { ok: true; entry: EntryRef; label: Level } | { ok: false; reason: "unknown-call" | "not-run"; message: string } {
    const rec = this.#calls.get(id);
    if (rec === undefined) return { ok: false, reason: "unknown-call", message: buildRefusalMessage("unknown-call", id) };
    if (rec.response?.body.decision !== "run") return { ok: false, reason: "not-run", message: buildRefusalMessage("not-run", id) };
    const where = entry ?? rec.entry;
    return { ok: true, entry: where, label: labelToolResult(this.#d, where, rec.tool, { text: content }) };
  }

  /** Refuses every pending call: the sidecar is stopping. */
  stop(): void {
    this.#d.approvals.cancelAll();
  }
}
