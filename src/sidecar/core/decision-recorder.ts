// Every decision is counted, logged and audited here, before the call it decides goes on: a decision whose
// record cannot be written is reported so the caller refuses the call (fail closed).
import type { DecisionSourceLabel, SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { Logger } from "../../log/logger.ts";
import type { RunStage } from "../executors/shell.ts";
import { isFileTool, listRequestedPaths, type FileToolArgs } from "../executors/file-tools.ts";
import type { AuditSink } from "../storage/audit-writer.ts";
import { buildGrantAuditFields } from "../storage/state-journal.ts";
import { computeToolClass } from "./call-inputs.ts";
import type { CallRecord } from "./call-records.ts";
import type { Enforcement } from "./enforcement.ts";

/** What the recorder writes to. */
export interface DecisionRecorderDeps {
  readonly policy: () => Enforcement;
  readonly currentStage: (enf?: Enforcement) => { index: number; stage: RunStage };
  readonly audit: AuditSink;
  readonly metrics: SidecarMetrics;
  readonly log: Logger;
  /** Milliseconds since the epoch. */
  readonly clock: () => number;
  /** The run's name: the audit's `agent_id`. */
  readonly runName: string;
}

/** Records the decisions of one run. */
export class DecisionRecorder {
  readonly #d: DecisionRecorderDeps;
  readonly #counts = new Map<DecisionSourceLabel, number>();

  /** A recorder over its sinks. */
  constructor(deps: DecisionRecorderDeps) {
    this.#d = deps;
  }

  /** Counts of decisions by source since the sidecar started. */
  get counts(): ReadonlyMap<DecisionSourceLabel, number> {
    return this.#counts;
  }

  /** Counts, logs and records a decision; false when its record could not be written. */
  decided(rec: CallRecord, decision: "allow" | "deny" | "ask", source: DecisionSourceLabel, code: string | undefined, seconds: number): boolean {
    const enf = this.#d.policy();
    const { index, stage } = this.#d.currentStage(enf);
    this.#counts.set(source, (this.#counts.get(source) ?? 0) + 1);
    this.#d.metrics.decision({ decision, source, toolClass: computeToolClass(rec.tool), mode: enf.mode }, seconds);
    const paths = safePaths(rec);
    // Built only when written: the bench and many deployments log at warn, and this runs on every call.
    if (this.#d.log.isLevelEnabled("info")) this.#d.log.info({ callId: rec.id, tool: rec.tool, decision, source, code, path: paths, stage: stage.name }, "tool call");
    const ok = this.#d.audit.decision(index, {
      timestamp: Math.floor(this.#d.clock() / 1000), agent_id: this.#d.runName, call_id: rec.id, tool_name: rec.tool, stage: stage.name,
      decision, decision_source: source, ...(code === undefined ? {} : { code }), ...(paths === undefined ? {} : { paths }),
      ...(rec.target === undefined ? {} : { target: rec.target }),
      ...(rec.answeredBy?.approvedBy === undefined ? {} : { approved_by: rec.answeredBy.approvedBy }),
      ...(rec.answeredBy?.reason === undefined ? {} : { approval_reason: rec.answeredBy.reason }),
      ...(rec.gaveUp === undefined ? {} : { gave_up: rec.gaveUp.reason }),
      ...(rec.gaveUp?.approvalId === undefined ? {} : { withdrawn_approval_id: rec.gaveUp.approvalId }),
    });
    if (!ok) this.#d.metrics.auditWriteError();
    return ok;
  }

  /** Records a grant for the rest of the run; false when its record could not be written. */
  runGrant(rec: CallRecord, key: string): boolean {
    const { index, stage } = this.#d.currentStage();
    const ok = this.#d.audit.decision(index, {
      timestamp: Math.floor(this.#d.clock() / 1000), agent_id: this.#d.runName, call_id: rec.id, tool_name: rec.tool, stage: stage.name,
      decision: "allow", decision_source: "user_approved", ...buildGrantAuditFields(key),
      ...(rec.answeredBy?.approvedBy === undefined ? {} : { approved_by: rec.answeredBy.approvedBy }),
    });
    if (!ok) this.#d.metrics.auditWriteError();
    return ok;
  }

  /** Records the gate's events; false when they could not be written. */
  gate(events: Parameters<AuditSink["gate"]>[1]): boolean {
    if (events.length === 0) return true;
    const ok = this.#d.audit.gate(this.#d.currentStage().index, events);
    if (!ok) this.#d.metrics.auditWriteError();
    return ok;
  }
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
