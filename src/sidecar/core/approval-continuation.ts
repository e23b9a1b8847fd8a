// A call waiting on a prompt, and how it goes on. The prompt is raised in the approval book (the `ask` recorded
// first); its settlement (an answer, the expiry, the client giving up, the sidecar stopping) means what
// decideSettlement says (a grant, a clearance raise, a refusal), and a call let through resumes: it is decided
// again from the step it stopped at (the pipeline's next pass). A call whose client gave up is withdrawn here: its
// prompt is closed, and it never runs.
import type { ApprovalKind } from "../../metrics/sidecar-metrics.ts";
import type { PendingGate } from "../../policy/gate.ts";
import { decideSettlement, type SettlementAction } from "./approval-settlement.ts";
import type { ApprovalBook, ApprovalSettlement } from "./approvals.ts";
import { buildDeny, type CallOutcome } from "./call-outcomes.ts";
import type { CallRecord, GiveUpReason } from "./call-records.ts";
import { buildGrantKey } from "./call-inputs.ts";
import { computeCurrentStage } from "./enforcement.ts";
import type { Ledger, LedgerDeps } from "./ledger.ts";
import type { RunSession } from "./run-session.ts";
import { describeCallTarget } from "./prompt-text.ts";
import type { HoldingCheck } from "../../policy/held-call.ts";
import type { IntegrityOutcome } from "../../policy/integrity-gate.ts";

/** A prompt a call must wait on. */
export interface CallPrompt {
  readonly kind: ApprovalKind;
  /** The approval's id (`tool-<call>`, `gate-<call>`). */
  readonly id: string;
  readonly text: string;
  readonly options: readonly string[];
  /** Seconds until it expires; undefined waits forever. */
  readonly timeoutSeconds: number | undefined;
  /** A gate prompt's pending gate, which its answer is settled against. */
  readonly pending?: PendingGate | undefined;
  /** A prompt naming several holds (issue 44): the checks it covers, in order; one answer settles them all. */
  readonly held?: readonly HoldingCheck[] | undefined;
  /** A held prompt's integrity outcome: on the call's records from integrity's own ask on, as when it was asked alone. */
  readonly integrity?: IntegrityOutcome | undefined;
}

/** What continuing a call needs (the clocks and sinks are the ledger's). */
export interface ApprovalContinuationDeps extends Pick<LedgerDeps, "policy" | "metrics" | "clock" | "monotonicMs"> {
  readonly approvals: ApprovalBook;
  readonly ledger: Ledger;
  readonly session: RunSession;
  /** Decides the call again from where its prompt stopped it, and goes on as far as it can. */
  readonly resume: (rec: CallRecord) => Promise<CallOutcome>;
}

/** Raises the prompts of waiting calls, and continues or refuses each call once its prompt is settled. */
export class ApprovalContinuation {
  readonly #d: ApprovalContinuationDeps;

  /** Continuations over the approval book and the ledger. */
  constructor(deps: ApprovalContinuationDeps) {
    this.#d = deps;
  }

  /** Records the `ask`, raises the prompt, and answers the call `ask`; its settlement continues the call later. */
  ask(rec: CallRecord, prompt: CallPrompt): CallOutcome {
    // The client hears "ask" now and then waits: its deadline now bounds how long it may take to wait again.
    if (rec.deadline !== undefined) this.#armGiveUp(rec, rec.deadline);
    rec.deadline = undefined;
    // Each hold's ask is on record as its own prompt's would be; a person is asked once.
    for (const check of prompt.held ?? [prompt.kind === "taint_gate" ? "gate" : "permission"]) {
      if (check === "integrity") rec.integrity = prompt.integrity ?? rec.integrity;
      this.#d.ledger.decided(rec, { decision: "ask", source: check === "gate" ? "auto_block" : "permission_ask" });
    }
    rec.integrity = prompt.integrity ?? rec.integrity;
    const enf = this.#d.policy();
    const { stage } = computeCurrentStage(enf, this.#d.session.stageIndex);
    const target = describeCallTarget(rec.tool, rec.args, enf.gatePolicy.overrides.get(rec.tool)?.target);
    const raised = { id: prompt.id, kind: prompt.kind, callId: rec.id, tool: rec.tool, ...(target === undefined ? {} : { target }), stage: stage.name, prompt: prompt.text, options: prompt.options };
    const approval = this.#d.approvals.raise(raised, prompt.timeoutSeconds, (s, waited) => {
      const outcome = s.kind === "expired" ? "expired" : s.kind === "answer" && s.decision !== "deny" ? "allowed" : "denied";
      if (s.kind !== "cancelled" && s.kind !== "withdrawn") this.#d.metrics.approvalAnswered(prompt.kind, outcome, waited);
      // Continue outside the answering call: the answer endpoint returns at once.
      queueMicrotask(() => void this.#settled(rec, prompt, s));
    });
    return this.#d.ledger.settle(rec, { kind: "ask", body: { id: rec.id, tool: rec.tool, decision: "ask", approval } });
  }

  /**
   * Withdraws a call whose client gave up: a prompt it waits on is closed (which refuses the call), a call between
   * steps meets the flag at the next one. False when there is nothing left to withdraw (settled, or withdrawn).
   */
  withdraw(rec: CallRecord, reason: GiveUpReason): boolean {
    if (rec.done || rec.gaveUp !== undefined) return false;
    const approvalId = rec.response?.kind === "ask" ? rec.response.body.approval.id : undefined;
    rec.gaveUp = { reason, approvalId };
    if (approvalId !== undefined) this.#d.approvals.withdraw(approvalId);
    return true;
  }

  /** A client's word that it waits for the call until `deadline` (ms since the epoch): unsettled then, it is withdrawn. */
  renewDeadline(rec: CallRecord, deadline: number): void {
    if (!rec.done) this.#armGiveUp(rec, deadline);
  }

  #armGiveUp(rec: CallRecord, deadline: number): void {
    clearTimeout(rec.giveUpTimer);
    rec.giveUpTimer = setTimeout(() => this.withdraw(rec, "deadline"), Math.max(0, deadline - this.#d.clock()));
    rec.giveUpTimer.unref();
  }

  async #settled(rec: CallRecord, prompt: CallPrompt, s: ApprovalSettlement): Promise<void> {
    rec.started = this.#d.monotonicMs();
    if (s.kind === "answer") rec.answeredBy = { approvedBy: s.approvedBy, reason: s.reason };
    const action = decideSettlement({ kind: prompt.kind, tool: rec.tool, pending: prompt.pending, held: prompt.held }, s, this.#d.clock);
    if (this.#apply(rec, action)) await this.#d.resume(rec);
  }

  /** Applies what the settlement means to the call; true when the call goes on. */
  #apply(rec: CallRecord, action: SettlementAction): boolean {
    const { ledger, session } = this.#d;
    switch (action.kind) {
      case "stopping":
        ledger.settle(rec, buildDeny(rec.id, rec.tool, "sidecar-stopping", rec.tool));
        return false;
      case "withdrawn":
        ledger.deny(rec, "client-gave-up", rec.tool);
        return false;
      case "permission-granted": {
        if (rec.integrityAsked === true) {
          rec.integrityDone = true;
          return true;
        }
        return this.#grant(rec, action.scope);
      }
      case "held-allowed":
        if (action.scope !== undefined && !this.#grant(rec, action.scope)) return false;
        if (!ledger.gate(action.events)) {
          ledger.deny(rec, "audit-failed", rec.tool);
          return false;
        }
        // Every check was decided when the prompt was raised: only the permission and the paths are decided again.
        rec.gateDone = true;
        rec.gateSource = action.source ?? rec.gateSource;
        rec.integrityDone = true;
        return true;
      case "deny":
      case "gate-allowed":
        break;
    }
    if (!ledger.gate(action.events)) {
      ledger.deny(rec, "audit-failed", rec.tool);
      return false;
    }
    if (action.kind === "deny") {
      ledger.refuse(rec, action.code, action.message);
      return false;
    }
    if (action.raise !== undefined) session.addRaise(action.raise);
    rec.gateDone = true;
    rec.gateSource = action.source;
    return true;
  }

  /** Applies a permission answer's grant (once, for the stage, for the run); false when the call was refused. */
  #grant(rec: CallRecord, scope: "once" | "stage" | "run"): boolean {
    const key = buildGrantKey(rec.tool, rec.args);
    // The approval is on record before the journal keeps it: a restart honours only an audited grant.
    if (scope === "run" && !this.#d.ledger.runGrant(rec, key)) {
      this.#d.ledger.settle(rec, buildDeny(rec.id, rec.tool, "audit-failed", rec.tool));
      return false;
    }
    if (scope !== "once") this.#d.session.grant(key, scope, rec.id);
    rec.permissionApproved = true;
    return true;
  }
}
