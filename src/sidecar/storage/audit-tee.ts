// Every audit record, once on disk, also goes out as one JSON line under a stable key (for the cluster's log
// pipeline: Fluent Bit, Vector, Loki collect container stdout without configuration) and to the store that
// outlives the pod (the Run's audit ConfigMaps). A record any of them refuses refuses the call (fail closed).
import type { AuditEvent } from "../../policy/gate-audit.ts";
import type { AuditSink, DecisionRecord } from "./audit-writer.ts";

/** The key of every audit line on the sidecar's stdout and in the audit ConfigMaps. */
export const AUDIT_LINE_KEY = "leviath_audit";

/** One audit line: the file it is also in (relative to the run's audit directory) and the record, verbatim. */
export interface AuditLine {
  readonly [AUDIT_LINE_KEY]: { readonly run: string; readonly file: string; readonly record: AuditEvent | DecisionRecord };
}

/** The JSON line of one record (ending in a newline). */
export function formatAuditTeeLine(run: string, file: string, record: AuditEvent | DecisionRecord): string {
  const line: AuditLine = { [AUDIT_LINE_KEY]: { run, file, record } };
  return `${JSON.stringify(line)}\n`;
}

/** Where tee'd lines go; false when the line cannot be kept (the store is full). */
export type AuditLineSink = (line: string) => boolean;

/** The audit sink `inner`, each record also handed to every one of `outs` (only once `inner` has it). */
export function createAuditTee(inner: AuditSink, run: string, outs: readonly AuditLineSink[]): AuditSink {
  const send = (lines: string[]): boolean => {
    let ok = true;
    for (const line of lines) for (const out of outs) ok = out(line) && ok;
    return ok;
  };
  return {
    gate: (stageIndex, events) => inner.gate(stageIndex, events) && send(events.map((e) => formatAuditTeeLine(run, `stages/${stageIndex}/taint_audit.jsonl`, e))),
    decision: (stageIndex, record) => inner.decision(stageIndex, record) && send([formatAuditTeeLine(run, `stages/${stageIndex}/decisions.jsonl`, record)]),
    flush: () => inner.flush(),
    close: () => inner.close(),
  };
}
