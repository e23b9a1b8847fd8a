// The ledger of one run's decisions, and the only place that records one: a decision is counted (the status's
// counts and the metric), logged, written to the audit, and its call's answer is set in the remembered calls. A
// decision whose record cannot be written is reported so the caller refuses the call (fail closed), and every such
// failure is counted. The ledger knows the policy and the stage only to fill the record: it never calls back.
import type { DecisionSourceLabel, IntegrityHoldOutcomeLabel, IntegrityHoldReasonLabel, SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { HoldReason, IntegrityOutcome } from "../../policy/integrity-gate.ts";
import { buildRefusalMessage, lookupRefusalSource, type RecordedRefusalCode, type RefusalMessageArgs } from "../../api/sidecar-contract.ts";
import type { AuditEvent } from "../../policy/gate-audit.ts";
import type { Logger } from "../../log/logger.ts";
import { isFileTool, listRequestedPaths, type FileToolArgs } from "../executors/file-tools.ts";
import type { AuditSink, DecisionRecord } from "../storage/audit-writer.ts";
import { buildGrantAuditFields } from "../storage/state-journal.ts";
import { computeToolClass } from "./call-inputs.ts";
import { buildDenyOutcome, type CallOutcome } from "./call-outcomes.ts";
import { CallRecords, type CallRecord, type CallRecordLimits } from "./call-records.ts";
import type { CallSpans } from "./call-spans.ts";
import { computeCurrentStage, type Enforcement } from "./enforcement.ts";

/** What the ledger writes to, and what fills a record; the limits are the remembered calls' budgets. */
export interface LedgerDeps extends CallRecordLimits {
  readonly policy: () => Enforcement;
  /** The run's current stage index (the session's). */
  readonly stageIndex: () => number;
  readonly audit: AuditSink;
  readonly metrics: SidecarMetrics;
  readonly log: Logger;
  /** Milliseconds since the epoch. */
  readonly clock: () => number;
  /** A monotonic clock in milliseconds (a decision's latency runs from its call's `started`). */
  readonly monotonicMs: () => number;
  /** The run's name: the audit's `agent_id`. */
  readonly runName: string;
  /** Each call's span (core/call-spans.ts); absent while tracing is off (the default). */
  readonly spans?: CallSpans | undefined;
}

/** One decision about a call. */
export interface DecisionEntry {
  readonly decision: "allow" | "deny" | "ask";
  readonly source: DecisionSourceLabel;
  /** The refusal code of a deny. */
  readonly code?: RecordedRefusalCode | undefined;
  /** When it was decided (monotonic ms), if before now: a file tool's allow is decided before its file is opened. */
  readonly at?: number | undefined;
}

/** Records the decisions of one run. */
export class Ledger {
  readonly #d: LedgerDeps;
  readonly #counts = new Map<DecisionSourceLabel, number>();
  /** The calls remembered, each with its answer (set here only). */
  readonly calls: CallRecords;

  /** A ledger over its sinks. */
  constructor(deps: LedgerDeps) {
    this.#d = deps;
    this.calls = new CallRecords(deps);
  }

  /** Counts of decisions by source since the sidecar started. */
  get counts(): ReadonlyMap<DecisionSourceLabel, number> {
    return this.#counts;
  }

  /** Counts, logs and records a decision; false when its record could not be written. */
  decided(rec: CallRecord, entry: DecisionEntry): boolean {
    const enf = this.#d.policy();
    const { index, stage } = computeCurrentStage(enf, this.#d.stageIndex());
    const { decision, source, code } = entry;
    this.#counts.set(source, (this.#counts.get(source) ?? 0) + 1);
    this.#d.metrics.decision({ decision, source, toolClass: computeToolClass(rec.tool), mode: enf.mode }, ((entry.at ?? this.#d.monotonicMs()) - rec.started) / 1000);
    const paths = safePaths(rec);
    this.#countHold(rec, entry);
    this.#d.spans?.decided(rec, entry, stage.name);
    // Built only when written: the bench and many deployments log at warn, and this runs on every call.
    if (this.#d.log.isLevelEnabled("info")) this.#d.log.info({ callId: rec.id, tool: rec.tool, decision, source, code, path: paths, stage: stage.name }, "tool call");
    return this.#write(index, {
      ...this.#callFields(rec, stage.name), decision, decision_source: source, ...(code === undefined ? {} : { code }), ...(paths === undefined ? {} : { paths }),
      ...(rec.target === undefined ? {} : { target: rec.target }),
      ...buildIntegrityAuditFields(rec.integrity),
      ...approvedBy(rec), ...(rec.answeredBy?.reason === undefined ? {} : { approval_reason: rec.answeredBy.reason }),
      ...(rec.gaveUp === undefined ? {} : { gave_up: rec.gaveUp.reason }),
      ...(rec.gaveUp?.approvalId === undefined ? {} : { withdrawn_approval_id: rec.gaveUp.approvalId }),
    });
  }

  /** Counts a held call once, at the decision that settles what became of its hold. */
  #countHold(rec: CallRecord, entry: DecisionEntry): void {
    const v = rec.integrity?.verdict;
    if (v === undefined || v.kind === "pass") return;
    const outcome = computeHoldOutcome(entry);
    if (outcome !== undefined) this.#d.metrics.integrityHold(toHoldReasonLabel(v.finding.reason), outcome, computeToolClass(rec.tool));
  }

  /** Records a grant for the rest of the run; false when its record could not be written. */
  runGrant(rec: CallRecord, key: string): boolean {
    const { index, stage } = computeCurrentStage(this.#d.policy(), this.#d.stageIndex());
    return this.#write(index, { ...this.#callFields(rec, stage.name), decision: "allow", decision_source: "user_approved", ...buildGrantAuditFields(key), ...approvedBy(rec) });
  }

  /** Records the gate's events (taint audit) of a pass of `rec`; false when they could not be written. */
  gate(events: readonly AuditEvent[], rec?: CallRecord): boolean {
    if (events.length === 0) return true;
    if (rec !== undefined) this.#d.spans?.gate(rec, events);
    const ok = this.#d.audit.gate(computeCurrentStage(this.#d.policy(), this.#d.stageIndex()).index, events);
    if (!ok) this.#d.metrics.auditWriteError();
    return ok;
  }

  /** Records what is no tool call's decision (a seed's, a resume) in the current stage; false when it could not be written. */
  record(record: DecisionRecord): boolean {
    return this.#write(this.#d.stageIndex(), record);
  }

  /** A refusal that is a decision, its message built from its row. */
  deny<C extends RecordedRefusalCode>(rec: CallRecord, code: C, ...args: RefusalMessageArgs<C>): CallOutcome {
    return this.refuse(rec, code, buildRefusalMessage(code, ...args));
  }

  /** A refusal that is a decision: recorded and counted under its row's decision source, and the call's answer. */
  refuse(rec: CallRecord, code: RecordedRefusalCode, message: string): CallOutcome {
    const source = lookupRefusalSource(code);
    this.decided(rec, { decision: "deny", source, code });
    return this.settle(rec, buildDenyOutcome({ id: rec.id, tool: rec.tool, decision: "deny", code, message }, source));
  }

  /** Sets the call's answer (an allow, a run or an ask already recorded, or a refusal that is no decision). */
  settle(rec: CallRecord, outcome: CallOutcome): CallOutcome {
    this.#d.spans?.settled(rec, outcome);
    return this.calls.finish(rec, outcome);
  }

  #callFields(rec: CallRecord, stage: string) {
    return { timestamp: Math.floor(this.#d.clock() / 1000), agent_id: this.#d.runName, call_id: rec.id, tool_name: rec.tool, stage };
  }

  #write(index: number, record: DecisionRecord): boolean {
    const ok = this.#d.audit.decision(index, record);
    if (!ok) this.#d.metrics.auditWriteError();
    return ok;
  }
}

function approvedBy(rec: CallRecord): { approved_by?: string } {
  return rec.answeredBy?.approvedBy === undefined ? {} : { approved_by: rec.answeredBy.approvedBy };
}

function safePaths(rec: CallRecord): string[] | undefined {
  if (!isFileTool(rec.tool)) return undefined;
  try {
    // The arguments may be the unparsed ones of a refused call: keep only strings.
    return listRequestedPaths(rec.tool, rec.args as FileToolArgs[typeof rec.tool]).filter((p) => typeof p === "string");
  } catch {
    return undefined;
  }
}

/** What became of a held call, by the decision that settles it; undefined for a decision that does not (an allow after its prompt). */
function computeHoldOutcome(entry: DecisionEntry): IntegrityHoldOutcomeLabel | undefined {
  if (entry.decision === "ask") return "asked";
  return HOLD_OUTCOME_OF[entry.source];
}

const HOLD_OUTCOME_OF: Partial<Record<DecisionSourceLabel, IntegrityHoldOutcomeLabel>> = {
  integrity_held: "refused", integrity_allowlist: "allowlist", integrity_rule: "rule", integrity_waived: "waived",
};

function toHoldReasonLabel(reason: HoldReason): IntegrityHoldReasonLabel {
  return reason.replaceAll("-", "_") as IntegrityHoldReasonLabel;
}

/** The integrity step's audit fields: the context's integrity and each argument's provenance, and for a hold why and from where. */
export function buildIntegrityAuditFields(outcome: IntegrityOutcome | undefined): Partial<DecisionRecord> {
  if (outcome === undefined) return {};
  const v = outcome.verdict;
  const provenance = Object.keys(outcome.argsProvenance).length === 0 ? {} : { args_provenance: outcome.argsProvenance };
  if (v.kind === "pass") return { integrity: outcome.integrity, ...provenance };
  const { entry, argument, reason } = v.finding;
  return {
    integrity: outcome.integrity, integrity_hold: reason, ...provenance,
    ...(entry === undefined ? {} : { untrusted_entry: { region: entry.region, id: entry.entryId, ...(entry.tool === undefined ? {} : { tool: entry.tool }) } }),
    ...(argument === undefined ? {} : { untrusted_argument: argument }),
  };
}
