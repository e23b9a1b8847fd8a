// The enforcement point (DESIGN.md §4): every tool call is decided here, permission first, then read paths,
// then the taint gate; a call runs only if all three allow. File tools and shell are executed here; other
// tools get `run` and the runtime reports their result, which is labelled here. Prompts wait in the
// approval book; their answers continue the call where it stopped.
import { hash } from "node:crypto";
import type { ApprovalDecision } from "../../api/approval.ts";
import type { RunResult } from "../../api/status.ts";
import { RESULT_TOOL } from "../../api/tools.ts";
import type { Logger } from "../../log/logger.ts";
import type { ApprovalKind, DecisionSourceLabel, SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import { lookupResultLabel } from "../../policy/classification.ts";
import { decideToolCall } from "../../policy/decide-tool-call.ts";
import { evaluateGate, type GateInput, type PendingGate } from "../../policy/gate.ts";
import type { PathFs } from "../../policy/read-paths/index.ts";
import { extractTarget } from "../../policy/targets.ts";
import { decideSettlement } from "./approval-settlement.ts";
import type { ApprovalBook, ApprovalSettlement } from "./approvals.ts";
import type { AuditSink } from "../storage/audit-writer.ts";
import { buildGrantKey, buildPermissionInputs, computeGateSource, isSettledBySidecar, isToolOffered, parseToolArgs, SHELL_TOOLS } from "./call-inputs.ts";
import { buildDeny, buildDenyOutcome, type CallOutcome } from "./call-outcomes.ts";
import { buildRefusalMessage, lookupRefusalSource, type EntryRef, type RecordedRefusalCode, type RefusalMessageArgs } from "../../api/sidecar-contract.ts";
import type { Enforcement } from "./enforcement.ts";
import { checkFilePaths, executeFileTool, findCallRefusal, isFileTool, type FileToolArgs, type PathCheck } from "../executors/file-tools.ts";
import { CallRecords, type CallRecord, type GiveUpReason } from "./call-records.ts";
import { DecisionRecorder } from "./decision-recorder.ts";
import type { ToolGateway } from "./tool-gateway.ts";
import { buildPermissionPrompt } from "./prompt-text.ts";
import type { RunSession } from "./run-session.ts";
import { extractOutput, measureOversizedResult, type ResultSink } from "./run-result.ts";
import { buildShellResultText, computeShellOutcome, type RunStage, type ShellExecutor } from "../executors/shell.ts";

/** What the service needs from the outside world. */
export interface ToolCallServiceDeps {
  readonly policy: () => Enforcement;
  /** The canonical workdir. */
  readonly workdir: string;
  readonly fs: PathFs;
  readonly session: RunSession;
  readonly approvals: ApprovalBook;
  readonly audit: AuditSink;
  readonly metrics: SidecarMetrics;
  readonly shell: ShellExecutor;
  readonly log: Logger;
  /** Milliseconds since the epoch. */
  readonly clock: () => number;
  /** A monotonic clock in milliseconds (latency). */
  readonly monotonicMs: () => number;
  /** The run's name: the audit's `agent_id`. */
  readonly runName: string;
  /** The admin's MCP servers (absent: none declared). */
  readonly gateway?: ToolGateway | undefined;
  /** Where an allowed `submit_output` is stored as the Run's result (absent: nowhere, as before). */
  readonly result?: ResultSink;
  /** Settled calls remembered for retries and waits (oldest forgotten first). */
  readonly maxRecords?: number;
  /** What the settled calls remembered may hold, arguments and results together, in UTF-16 code units (about bytes). */
  readonly maxRecordChars?: number;
  /** How many calls may be pending (being decided, executed or waiting on a prompt) at once. */
  readonly maxPendingCalls?: number;
  /** What the pending calls may hold together (their arguments), in UTF-16 code units. */
  readonly maxPendingChars?: number;
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
}

/** The default region of a tool result in the runtime's context. */
export const DEFAULT_RESULT_REGION = "conversation";

/** Decides, executes and remembers the tool calls of one run. */
export class ToolCallService {
  readonly #d: ToolCallServiceDeps;
  readonly #calls: CallRecords;
  readonly #record: DecisionRecorder;

  /** A service over its dependencies. */
  constructor(deps: ToolCallServiceDeps) {
    this.#d = deps;
    this.#calls = new CallRecords(deps);
    this.#record = new DecisionRecorder({ ...deps, currentStage: (enf) => this.currentStage(enf) });
  }

  /** The Run's result, once an allowed `submit_output` was stored. */
  get result(): RunResult | undefined {
    return this.#d.result?.current();
  }

  /** Counts of decisions by source since the sidecar started. */
  get decisionCounts(): ReadonlyMap<DecisionSourceLabel, number> {
    return this.#record.counts;
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
    const stages = enf.runPolicy.stages;
    const index = Math.min(this.#d.session.stageIndex, stages.length - 1);
    return { index, stage: stages[index]! };
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
    const args = parsed.ok ? parsed.value : req.args;
    const rec: CallRecord = {
      id: req.id, seq: this.#calls.nextSeq(), tool: req.tool, fingerprint, size: json.length, args, target: extractTarget(req.tool, args, this.#d.policy().gatePolicy.overrides.get(req.tool)?.target),
      entry: req.entry ?? { region: DEFAULT_RESULT_REGION, id: req.id },
      permissionApproved: false, permissionDone: false, gateDone: false, gateSource: "taint_disabled",
      started: this.#d.monotonicMs(), response: undefined, first: undefined, done: false, waiters: undefined, chars: 0,
      deadline: req.deadline, callerRuns: req.callerRuns ?? true,
    };
    this.#calls.add(rec);
    if (full) return this.#deny(rec, "pending-full", rec.tool, this.#calls.maxPendingCalls);
    if (this.#gaveUp(rec)) return this.#refuseGaveUp(rec);
    if (!parsed.ok) return this.#deny(rec, "invalid-arguments", req.tool, parsed.detail);
    const tooLarge = measureOversizedResult(req.tool, parsed.value);
    if (tooLarge !== undefined) return this.#deny(rec, "result-too-large", req.tool, tooLarge);
    const first = this.#advance(rec);
    if (rec.response === undefined) rec.first = first;
    return first;
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
    if (rec === undefined || rec.done || rec.gaveUp !== undefined) return false;
    const approvalId = rec.response?.kind === "ask" ? rec.response.body.approval.id : undefined;
    rec.gaveUp = { reason, approvalId };
    // Closing the prompt settles the call (#settled); a call between steps meets the flag at the next one.
    if (approvalId !== undefined) this.#d.approvals.withdraw(approvalId);
    return true;
  }

  /**
   * A client's word that it waits for the call until `deadline` (milliseconds since the epoch, a `/v1` wait's
   * `leviath-deadline`): if the call is still unsettled then and no later wait renewed it, it is withdrawn.
   */
  renewDeadline(id: string, deadline: number): void {
    const rec = this.#calls.get(id);
    if (rec !== undefined && !rec.done) this.#armGiveUp(rec, deadline);
  }

  #armGiveUp(rec: CallRecord, deadline: number): void {
    clearTimeout(rec.giveUpTimer);
    rec.giveUpTimer = setTimeout(() => this.withdraw(rec.id, "deadline"), Math.max(0, deadline - this.#d.clock()));
    rec.giveUpTimer.unref();
  }

  /** Answers a pending prompt; false when none has this id. */
  answer(approvalId: string, decision: ApprovalDecision, reason?: string, approvedBy?: string): boolean {
    return this.#d.approvals.answer(approvalId, decision, reason, approvedBy);
  }

  /** Labels the result the runtime reports for a call decided `run`. */
  reportResult(id: string, entry: EntryRef | undefined): { ok: true; entry: EntryRef; label: ReturnType<typeof lookupResultLabel> } | { ok: false; reason: "unknown-call" | "not-run"; message: string } {
    const rec = this.#calls.get(id);
    if (rec === undefined) return { ok: false, reason: "unknown-call", message: buildRefusalMessage("unknown-call", id) };
    if (rec.response?.body.decision !== "run") return { ok: false, reason: "not-run", message: buildRefusalMessage("not-run", id) };
    const where = entry ?? rec.entry;
    const label = this.#d.session.label(where.region, where.id, lookupResultLabel(this.#d.policy().resultLabels, rec.tool));
    this.#taintChanged();
    return { ok: true, entry: where, label };
  }

  /** Publishes the context taint (after any label or eviction). */
  #taintChanged(): void {
    this.#d.metrics.taint(this.#d.session.context.level(), this.#d.policy().runPolicy.taint.tracking);
  }

  /** Refuses every pending call: the sidecar is stopping. */
  stop(): void {
    this.#d.approvals.cancelAll();
  }

  #gateInput(enf: Enforcement, rec: CallRecord, tracking: boolean): GateInput {
    const rp = enf.runPolicy;
    return {
      taintTracking: tracking, agentId: this.#d.runName, callId: rec.id, tool: rec.tool,
      args: rec.args, target: rec.target, context: this.#d.session.context, policy: enf.gatePolicy,
      mode: enf.mode, sessionRaises: this.#d.session.raises, promptTimeoutSeconds: rp.limits.interactionTimeoutSeconds, clock: this.#d.clock,
    };
  }

  async #advance(rec: CallRecord): Promise<CallOutcome> {
    const enf = this.#d.policy();
    const rp = enf.runPolicy;
    const { stage } = this.currentStage(enf);
    if (this.#d.gateway?.claims(rec.tool) === true) await this.#d.gateway.ready();
    if (this.#gaveUp(rec)) return this.#refuseGaveUp(rec);
    if (!isToolOffered(stage, enf.offeredTools, rec.tool, this.#d.gateway) || (!rec.callerRuns && !isSettledBySidecar(rec.tool, this.#d.gateway))) {
      return this.#deny(rec, "tool-unavailable", rec.tool, stage.name);
    }
    if (!rec.permissionDone) {
      const grant = this.#d.session.hasGrant(buildGrantKey(rec.tool, rec.args));
      // Permission only: the gate is evaluated (and audited) below, after the read-path check.
      const d = decideToolCall({ gate: this.#gateInput(enf, rec, false), permissions: buildPermissionInputs(rp, stage), permissionApproved: rec.permissionApproved || grant });
      if (d.kind === "refuse") {
        return this.#deny(rec, d.reason === "permission-denied" ? "permission-denied" : "approval-unavailable", d.message);
      }
      if (d.kind === "ask-permission") {
        return this.#ask(rec, "tool_approval", `tool-${rec.id}`, buildPermissionPrompt(rec.tool, rec.args, enf.gatePolicy.overrides.get(rec.tool)?.target), d.prompt.options, d.prompt.timeoutSeconds, undefined);
      }
      rec.permissionDone = true;
    }
    let checks: PathCheck[] | undefined;
    if (isFileTool(rec.tool)) {
      checks = checkFilePaths(rec.tool, rec.args as FileToolArgs[typeof rec.tool], { workdir: this.#d.workdir, policy: enf.readPolicy, fs: this.#d.fs });
      const refusal = findCallRefusal(checks);
      if (refusal !== undefined) return this.#refuse(rec, refusal.code, refusal.message);
    }
    if (!rec.gateDone) {
      const out = evaluateGate(this.#gateInput(enf, rec, rp.taint.tracking));
      for (const d of out.ruleDiagnostics) this.#d.log.warn({ callId: rec.id, rule: d.rule, kind: d.kind }, d.message);
      if (!this.#record.gate(out.events)) return this.#deny(rec, "audit-failed", rec.tool);
      if (out.kind === "block") return this.#deny(rec, "gate-blocked", out.message);
      if (out.kind === "prompt") return this.#ask(rec, "taint_gate", out.prompt.requestId, out.prompt.text, out.prompt.options, out.prompt.timeoutSeconds, out.pending);
      rec.gateDone = true;
      const source = computeGateSource(out.events);
      rec.gateSource = rec.permissionApproved && (source === "auto_allow" || source === "taint_disabled") ? "user_approved" : source;
    }
    return this.#execute(rec, enf, stage, checks);
  }

  /** Whether the client gave up: it withdrew the call, or its deadline for the first answer passed (the sidecar was stopped or slow). */
  #gaveUp(rec: CallRecord): boolean {
    return rec.gaveUp !== undefined || (rec.deadline !== undefined && this.#d.clock() > rec.deadline);
  }

  #refuseGaveUp(rec: CallRecord): CallOutcome {
    return this.#deny(rec, "client-gave-up", rec.tool);
  }

  async #execute(rec: CallRecord, enf: Enforcement, stage: RunStage, checks: PathCheck[] | undefined): Promise<CallOutcome> {
    // Checked again right before anything runs: the sidecar may have been stopped (SIGSTOP) since the call came in.
    if (this.#gaveUp(rec)) return this.#refuseGaveUp(rec);
    // A server's name never falls through to the runtime: dropped by a reload while the call waited, it is refused.
    const server = this.#d.gateway?.claims(rec.tool) === true ? this.#d.gateway.find(rec.tool)?.server : undefined;
    if (this.#d.gateway?.claims(rec.tool) === true && server === undefined) return this.#deny(rec, "tool-unavailable", rec.tool, stage.name);
    const seconds = (this.#d.monotonicMs() - rec.started) / 1000;
    if (checks !== undefined && isFileTool(rec.tool)) {
      const outcome = executeFileTool(rec.tool, rec.args as FileToolArgs[typeof rec.tool], checks);
      if (outcome.kind === "refused") return this.#refuse(rec, outcome.refusal.code, outcome.refusal.message);
      if (!this.#record.decided(rec, "allow", rec.gateSource, undefined, seconds)) return this.#auditFailed(rec);
      return this.#allow(rec, enf, outcome.result, outcome.isError, undefined);
    }
    if (!this.#record.decided(rec, "allow", rec.gateSource, undefined, seconds)) return this.#auditFailed(rec);
    if (SHELL_TOOLS.has(rec.tool)) {
      const timeoutSeconds = enf.runPolicy.limits.shellTimeoutSeconds;
      const r = await this.#d.shell.run({ command: String(rec.args["command"]), timeoutSeconds, stage });
      this.#d.metrics.shell(this.#d.shell.label, computeShellOutcome(r));
      const text = buildShellResultText(r, timeoutSeconds);
      return this.#allow(rec, enf, text.text, text.isError, { exitCode: r.exitCode, timedOut: r.timedOut });
    }
    if (this.#d.gateway !== undefined && server !== undefined) {
      const r = await this.#d.gateway.call(rec.tool, rec.args);
      this.#d.metrics.mcpCall(server, r.isError ? "error" : "ok");
      return this.#allow(rec, enf, r.text, r.isError, undefined);
    }
    if (rec.tool === RESULT_TOOL && this.#d.result !== undefined) {
      // Stored before the runtime hears `run`: an answer it was told was handed over is on record.
      const stored = await this.#d.result.store({ output: extractOutput(rec.args), callId: rec.id, stage: stage.name });
      if (!stored.ok) {
        this.#d.log.error({ callId: rec.id, err: stored.message }, "result could not be stored");
        return this.#deny(rec, "result-not-stored", rec.tool);
      }
    }
    const target = rec.target;
    return this.#finish(rec, { kind: "run", body: { id: rec.id, tool: rec.tool, decision: "run", ...(target === undefined ? {} : { target }) } });
  }

  #allow(rec: CallRecord, enf: Enforcement, result: string, isError: boolean, shell: { exitCode: number | null; timedOut: boolean } | undefined): CallOutcome {
    const label = this.#d.session.label(rec.entry.region, rec.entry.id, lookupResultLabel(enf.resultLabels, rec.tool));
    this.#taintChanged();
    const body = { id: rec.id, tool: rec.tool, decision: "allow" as const, result, isError, entry: rec.entry, label, taint: this.#d.session.context.level(), ...(shell ? { shell } : {}) };
    return this.#finish(rec, { kind: "allow", body });
  }

  #ask(rec: CallRecord, kind: ApprovalKind, id: string, prompt: string, options: readonly string[], timeoutSeconds: number | undefined, pending: PendingGate | undefined): CallOutcome {
    const seconds = (this.#d.monotonicMs() - rec.started) / 1000;
    // The client hears "ask" now and then waits: its deadline now bounds how long it may take to wait again.
    if (rec.deadline !== undefined) this.#armGiveUp(rec, rec.deadline);
    rec.deadline = undefined;
    this.#record.decided(rec, "ask", kind === "taint_gate" ? "auto_block" : "permission_ask", undefined, seconds);
    const { stage } = this.currentStage();
    const approval = this.#d.approvals.raise({ id, kind, callId: rec.id, tool: rec.tool, stage: stage.name, prompt, options }, timeoutSeconds, (s, waited) => {
      const outcome = s.kind === "expired" ? "expired" : s.kind === "answer" && s.decision !== "deny" ? "allowed" : "denied";
      if (s.kind !== "cancelled" && s.kind !== "withdrawn") this.#d.metrics.approvalAnswered(kind, outcome, waited);
      // Continue outside the answering call: the answer endpoint returns at once.
      queueMicrotask(() => void this.#settled(rec, kind, s, pending));
    });
    return this.#finish(rec, { kind: "ask", body: { id: rec.id, tool: rec.tool, decision: "ask", approval } });
  }

  async #settled(rec: CallRecord, kind: ApprovalKind, s: ApprovalSettlement, pending: PendingGate | undefined): Promise<void> {
    rec.started = this.#d.monotonicMs();
    if (s.kind === "answer") rec.answeredBy = { approvedBy: s.approvedBy, reason: s.reason };
    const action = decideSettlement(kind, rec.tool, s, pending, this.#d.clock);
    if (action.kind === "stopping") {
      this.#finish(rec, buildDeny(rec.id, rec.tool, "sidecar-stopping", rec.tool));
      return;
    }
    if (action.kind === "withdrawn") {
      this.#refuseGaveUp(rec);
      return;
    }
    if (action.kind === "permission-granted") {
      const key = buildGrantKey(rec.tool, rec.args);
      // The approval is on record before the journal keeps it: a restart honours only an audited grant.
      if (action.scope === "run" && !this.#record.runGrant(rec, key)) {
        this.#auditFailed(rec);
        return;
      }
      if (action.scope !== "once") this.#d.session.grant(key, action.scope, rec.id);
      rec.permissionApproved = true;
      await this.#advance(rec);
      return;
    }
    if (!this.#record.gate(action.events)) {
      this.#deny(rec, "audit-failed", rec.tool);
      return;
    }
    if (action.kind === "deny") {
      this.#deny(rec, action.code, action.message);
      return;
    }
    if (action.raise !== undefined) this.#d.session.addRaise(action.raise);
    rec.gateDone = true;
    rec.gateSource = action.source;
    await this.#advance(rec);
  }

  #auditFailed(rec: CallRecord): CallOutcome {
    return this.#finish(rec, buildDeny(rec.id, rec.tool, "audit-failed", rec.tool));
  }

  /** A refusal that is a decision: recorded and counted under its row's decision source, which rides beside it. */
  #deny<C extends RecordedRefusalCode>(rec: CallRecord, code: C, ...args: RefusalMessageArgs<C>): CallOutcome {
    return this.#refuse(rec, code, buildRefusalMessage(code, ...args));
  }

  /** A recorded refusal whose message was built from its row already (a file tool's). */
  #refuse(rec: CallRecord, code: RecordedRefusalCode, message: string): CallOutcome {
    const source = lookupRefusalSource(code);
    this.#record.decided(rec, "deny", source, code, (this.#d.monotonicMs() - rec.started) / 1000);
    return this.#finish(rec, buildDenyOutcome({ id: rec.id, tool: rec.tool, decision: "deny", code, message }, source));
  }

  #finish(rec: CallRecord, response: CallOutcome): CallOutcome {
    const out = this.#calls.finish(rec, response);
    if (rec.done && rec.giveUpTimer !== undefined) {
      clearTimeout(rec.giveUpTimer);
      rec.giveUpTimer = undefined;
    }
    return out;
  }
}
