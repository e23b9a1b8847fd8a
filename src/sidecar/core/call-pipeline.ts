// The pipeline every tool call goes through, whichever front-end brought it (DESIGN.md §4): admitted (the stage
// offers the tool, its client still waits), decided (policy/decide-tool-call.ts: permission, read paths, taint
// gate), recorded (the ledger), then executed by the executor of its kind (executors/executor-table.ts) or answered
// `ask` (approval-continuation.ts, which brings it back here once its prompt is settled). Every refusal of a call
// is made here, at its admission (tool-call-service.ts) or at its prompt's settlement, and recorded by the ledger.
import type { RunStage } from "../executors/shell.ts";
import type { Level } from "../../policy/levels.ts";
import type { SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { EntryRef } from "../../api/sidecar-contract.ts";
import type { PathCheck } from "../../policy/call-paths.ts";
import { lookupResultLabel } from "../../policy/classification.ts";
import { resolveIntegrityClassification, resolveResultIntegrity } from "../../policy/integrity-classification.ts";
import { decideToolCall, type ToolCallDecision, type ToolCallInput } from "../../policy/decide-tool-call.ts";
import type { PathFs } from "../../policy/read-paths/index.ts";
import { buildCallPaths, isFileTool, type FileToolArgs } from "../executors/file-tools.ts";
import type { ExecutionOutcome } from "../executors/execution-outcome.ts";
import { pickExecutor, type ExecutorTable } from "../executors/executor-table.ts";
import { isSearchBacked } from "../executors/web-search.ts";
import { ApprovalContinuation } from "./approval-continuation.ts";
import type { ApprovalBook } from "./approvals.ts";
import { buildGrantKey, buildPermissionInputs, isSettledBySidecar, isToolOffered } from "./call-inputs.ts";
import { buildDeny, type CallOutcome } from "./call-outcomes.ts";
import { hasGivenUp, type CallRecord } from "./call-records.ts";
import { computeCurrentStage, type Enforcement } from "./enforcement.ts";
import type { Ledger, LedgerDeps } from "./ledger.ts";
import { buildPermissionPrompt } from "./prompt-text.ts";
import { buildHeldPromptText } from "../../policy/held-call.ts";
import { describeHeldPrompt } from "./approval-settlement.ts";
import type { RunSession } from "./run-session.ts";
import type { ToolGateway } from "./tool-gateway.ts";
import type { PolicyVerdict } from "../../policy/policy-flips.ts";
import type { PolicyRollout, RolloutVerdict } from "./policy-rollout.ts";

/** What the pipeline works with (the clocks, sinks and run name are the ledger's). */
export interface CallPipelineDeps extends Pick<LedgerDeps, "policy" | "metrics" | "log" | "clock" | "monotonicMs" | "runName"> {
  /** The canonical workdir. */
  readonly workdir: string;
  readonly fs: PathFs;
  readonly session: RunSession;
  readonly approvals: ApprovalBook;
  readonly gateway?: ToolGateway | undefined;
  readonly ledger: Ledger;
  readonly executors: ExecutorTable;
  /** A policy rollout reaching this Run (absent: standalone, or none wired). */
  readonly rollout?: PolicyRollout | undefined;
}

/** What labelling a result needs. */
export interface ResultLabelDeps {
  readonly session: RunSession;
  readonly metrics: SidecarMetrics;
  readonly policy: () => Enforcement;
}

/** What a result's integrity label is resolved from beyond its tool: its text, the paths read, the stage's sandbox; and the policy it was decided under. */
export interface ResultFacts {
  readonly enf?: Enforcement | undefined;
  readonly text?: string | undefined;
  readonly paths?: readonly PathCheck[] | undefined;
  readonly sandboxNetwork?: boolean | undefined;
}

/**
 * Labels a tool result at its tool's result label under `facts.enf` (the policy the call was decided under; default
 * the one in force), an existing higher label staying, and its integrity from the tool's classification (with its text
 * for provenance), and publishes the taint.
 */
export function labelToolResult(d: ResultLabelDeps, entry: EntryRef, tool: string, facts: ResultFacts = {}): Level {
  const enf = facts.enf ?? d.policy();
  const ip = enf.runPolicy.integrity;
  const source = resolveIntegrityClassification(tool, enf.gatePolicy.overrides.get(tool), ip.checkTargets).results;
  const integrity = resolveResultIntegrity(source, { workdir: ip.workdir, readPaths: ip.readPaths, paths: facts.paths, sandboxNetwork: facts.sandboxNetwork });
  const label = d.session.label(entry.region, entry.id, lookupResultLabel(enf.resultLabels, tool), { integrity, tool, text: facts.text });
  d.metrics.taint(d.session.context.level(), d.policy().runPolicy.taint.tracking);
  return label;
}

/** Takes calls through admission, decision, record and execution. */
export class CallPipeline {
  readonly #d: CallPipelineDeps;
  /** Calls waiting on prompts, and their way back here. */
  readonly continuation: ApprovalContinuation;

  /** A pipeline over its dependencies. */
  constructor(deps: CallPipelineDeps) {
    this.#d = deps;
    this.continuation = new ApprovalContinuation({ ...deps, resume: (rec) => this.advance(rec) });
  }

  /** Takes a call as far as it goes now: a refusal, an `ask`, an executed allow, or `run` for the runtime. */
  async advance(rec: CallRecord): Promise<CallOutcome> {
    const { gateway, ledger } = this.#d;
    const enf = this.#d.policy();
    const { stage } = computeCurrentStage(enf, this.#d.session.stageIndex);
    if (gateway?.claims(rec.tool) === true || pickExecutor(rec.tool, gateway) === "search") await gateway?.ready();
    if (hasGivenUp(rec, this.#d.clock())) return ledger.deny(rec, "client-gave-up", rec.tool);
    if (!isToolOffered(stage, enf, rec.tool, gateway) || (!rec.callerRuns && !isSettledBySidecar(rec.tool, gateway))) {
      return ledger.deny(rec, "tool-unavailable", rec.tool, stage.name);
    }
    const followed = this.#decide(enf, stage, rec);
    // The generation in force (a rollout) may not offer the tool at the stage: refused, as the pinned policy would.
    if (followed.verdict.kind === "unavailable") return ledger.deny(rec, "tool-unavailable", rec.tool, stage.name);
    const d = followed.verdict;
    const gate = d.kind === "ask-permission" ? undefined : d.gate;
    for (const diag of gate?.ruleDiagnostics ?? []) this.#d.log.warn({ callId: rec.id, rule: diag.rule, kind: diag.kind }, diag.message);
    if (!ledger.gate(d.events, rec)) return ledger.deny(rec, "audit-failed", rec.tool);
    return this.#follow(rec, d, followed.enf, computeCurrentStage(followed.enf, this.#d.session.stageIndex).stage);
  }

  /** The call's decision under the pinned policy, and under a rollout's policies when one reaches the Run. */
  #decide(enf: Enforcement, stage: RunStage, rec: CallRecord): RolloutVerdict {
    const pinned = decideToolCall(this.#decisionInput(enf, stage, rec));
    return this.#d.rollout?.decide(rec, { verdict: pinned, enf }, (e) => this.#verdictUnder(e, rec)) ?? { verdict: pinned, enf };
  }

  /** The call's verdict under another policy of a rollout: what its stage offers, then the one pure decision. */
  #verdictUnder(enf: Enforcement, rec: CallRecord): PolicyVerdict {
    const { stage } = computeCurrentStage(enf, this.#d.session.stageIndex);
    if (!isToolOffered(stage, enf, rec.tool, this.#d.gateway)) return { kind: "unavailable" };
    return decideToolCall(this.#decisionInput(enf, stage, rec));
  }

  /** The decision's input: the call as it stands, the policy in force, the steps an earlier pass settled. */
  #decisionInput(enf: Enforcement, stage: RunStage, rec: CallRecord): ToolCallInput {
    const rp = enf.runPolicy;
    const grant = !rec.permissionDone && this.#d.session.hasGrant(buildGrantKey(rec.tool, rec.args));
    const readPaths = { workdir: this.#d.workdir, policy: enf.readPolicy, fs: this.#d.fs };
    const gate = {
      taintTracking: rp.taint.tracking, agentId: this.#d.runName, callId: rec.id, tool: rec.tool,
      args: rec.args, target: rec.target, context: this.#d.session.context, policy: enf.gatePolicy,
      mode: enf.mode, sessionRaises: this.#d.session.raises, promptTimeoutSeconds: rp.limits.interactionTimeoutSeconds, clock: this.#d.clock,
    };
    return {
      gate, permissions: buildPermissionInputs(rp, stage),
      permissionApproved: rec.permissionApproved || grant, answeredPrompt: rec.permissionApproved, args: rec.args,
      ...(isFileTool(rec.tool) ? { paths: buildCallPaths(rec.tool, rec.args as FileToolArgs[typeof rec.tool], readPaths) } : {}),
      passed: { permission: rec.permissionDone, gate: rec.gateDone ? rec.gateSource : undefined, integrity: rec.integrityDone === true },
      integrity: { context: this.#d.session.integrity, policy: enf.integrityPolicy },
    };
  }

  /** Does what the decision says. */
  #follow(rec: CallRecord, d: ToolCallDecision, enf: Enforcement, stage: RunStage): CallOutcome | Promise<CallOutcome> {
    const { continuation } = this;
    // A pass that skipped the step (its hold answered) keeps what the step found before.
    // (A held prompt's asks are recorded as each check's own: integrity's outcome joins the records from integrity's ask on.)
    if ("integrity" in d && d.kind !== "ask-held") rec.integrity = d.integrity ?? rec.integrity;
    switch (d.kind) {
      case "refuse":
        return this.#d.ledger.refuse(rec, d.reason, d.message);
      case "ask-integrity": {
        // The steps before it are passed; its answer settles the hold once (no grant for the stage or the run).
        rec.permissionDone = true;
        rec.gateDone = true;
        rec.gateSource = d.source;
        rec.integrityAsked = true;
        const { options, timeoutSeconds, text } = d.prompt;
        return continuation.ask(rec, { kind: "tool_approval", id: `integrity-${rec.id}`, text, options, timeoutSeconds });
      }
      case "ask-permission": {
        const { options, timeoutSeconds } = d.prompt;
        return continuation.ask(rec, { kind: "tool_approval", id: `tool-${rec.id}`, text: buildPermissionPrompt(rec.tool, rec.args, enf.gatePolicy.overrides.get(rec.tool)?.target), options, timeoutSeconds });
      }
      case "ask-gate": {
        rec.permissionDone = true;
        const { requestId, text, options, timeoutSeconds } = d.prompt;
        return continuation.ask(rec, { kind: "taint_gate", id: requestId, text, options, timeoutSeconds, pending: d.pending });
      }
      case "ask-held": {
        // One prompt for every hold; its answer settles them all (approval-settlement.ts), the permission's included when it asked.
        const { holds, prompt } = d;
        rec.permissionDone = !holds.some((h) => h.check === "permission");
        rec.gateSource = d.source;
        const texts = holds.map((h) => ({ check: h.check, text: h.check === "permission" ? buildPermissionPrompt(rec.tool, rec.args, enf.gatePolicy.overrides.get(rec.tool)?.target) : h.prompt.text }));
        return continuation.ask(rec, { ...describeHeldPrompt(rec.id, holds), text: buildHeldPromptText(texts), options: prompt.options, timeoutSeconds: prompt.timeoutSeconds, integrity: d.integrity });
      }
      case "run":
        rec.permissionDone = true;
        rec.gateDone = true;
        rec.gateSource = d.source;
        return this.#execute(rec, enf, stage, d.paths);
    }
  }

  async #execute(rec: CallRecord, enf: Enforcement, stage: RunStage, paths: readonly PathCheck[] | undefined): Promise<CallOutcome> {
    const { ledger, gateway } = this.#d;
    // Checked again right before anything runs: the sidecar may have been stopped (SIGSTOP) since the call came in.
    if (hasGivenUp(rec, this.#d.clock())) return ledger.deny(rec, "client-gave-up", rec.tool);
    const key = pickExecutor(rec.tool, gateway);
    // A server's name never falls through to the runtime: dropped by a reload while the call waited, it is refused.
    if (key === "gateway" && gateway?.find(rec.tool) === undefined) return ledger.deny(rec, "tool-unavailable", rec.tool, stage.name);
    // web_search's backend dropped by a reload (or its server gone) while the call waited: refused, never run elsewhere.
    if (key === "search" && !isSearchBacked(enf.runPolicy.webSearch, gateway)) return ledger.deny(rec, "tool-unavailable", rec.tool, stage.name);
    const executor = this.#d.executors[key];
    const allowed = { decision: "allow" as const, source: rec.gateSource, at: this.#d.monotonicMs() };
    if (executor.records === "before" && !ledger.decided(rec, allowed)) return this.#auditFailed(rec);
    const out = await executor.execute({ id: rec.id, tool: rec.tool, args: rec.args, stage, shellTimeoutSeconds: enf.runPolicy.limits.shellTimeoutSeconds, outbound: enf.runPolicy.outbound, paths, webSearch: enf.runPolicy.webSearch });
    switch (out.kind) {
      case "refused":
        return ledger.refuse(rec, out.code, out.message);
      case "handed-back":
        return ledger.settle(rec, { kind: "run", body: { id: rec.id, tool: rec.tool, decision: "run", ...(rec.target === undefined ? {} : { target: rec.target }) } });
      case "done":
        if (executor.records === "after" && !ledger.decided(rec, allowed)) return this.#auditFailed(rec);
        return this.#allow(rec, out, enf, { paths, sandboxNetwork: stage.sandbox.network });
    }
  }

  #allow(rec: CallRecord, done: Extract<ExecutionOutcome, { kind: "done" }>, enf: Enforcement, facts: ResultFacts): CallOutcome {
    const { result, isError, shell } = done;
    const label = labelToolResult(this.#d, rec.entry, rec.tool, { ...facts, enf, text: result });
    const body = { id: rec.id, tool: rec.tool, decision: "allow" as const, result, isError, entry: rec.entry, label, taint: this.#d.session.context.level(), ...(shell ? { shell } : {}) };
    return this.#d.ledger.settle(rec, { kind: "allow", body });
  }

  /** An allow whose record could not be written: refused, and no decision (none is on record). */
  #auditFailed(rec: CallRecord): CallOutcome {
    return this.#d.ledger.settle(rec, buildDeny(rec.id, rec.tool, "audit-failed", rec.tool));
  }
}
