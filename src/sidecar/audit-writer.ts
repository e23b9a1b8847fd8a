// The run's audit trail (DESIGN.md §5): the gate's events with upstream's field names, appended as JSON Lines
// per run and stage at `<root>/<run>/stages/<n>/taint_audit.jsonl` (upstream rewrites a JSON array at
// `runs/<run>/stages/<n>/taint_audit.json`), and beside it `decisions.jsonl`, one line per decision the sidecar
// made (permission, read paths, workdir and the gate), which upstream has no equivalent of.
import { join } from "node:path";
import { formatAuditLine, type AuditEvent } from "../policy/audit.ts";
import { JsonLinesFile } from "./json-lines-file.ts";

/** One line of `decisions.jsonl`. */
export interface DecisionRecord {
  readonly timestamp: number;
  readonly agent_id: string;
  readonly call_id: string;
  readonly tool_name: string;
  readonly stage: string;
  readonly decision: "allow" | "deny" | "ask";
  readonly decision_source: string;
  readonly code?: string;
  /** The paths as requested (never file contents). */
  readonly paths?: readonly string[];
}

/** Where audit records go; each method reports whether the record is on disk (false: refuse the call). */
export interface AuditSink {
  gate(stageIndex: number, events: readonly AuditEvent[]): boolean;
  decision(stageIndex: number, record: DecisionRecord): boolean;
  flush(): void;
  close(): void;
}

/** A run name is one path component: letters, digits, `.`, `_`, `-`, and not `.` or `..`. */
export function isSafeRunName(name: string): boolean {
  return /^[A-Za-z0-9._-]{1,253}$/.test(name) && name !== "." && name !== "..";
}

/** The audit files of one run under `root`. */
export function createAuditWriter(root: string, run: string, onError: (err: unknown) => void, syncIntervalMs?: number): AuditSink {
  if (!isSafeRunName(run)) throw new Error(`run name '${run}' is not a safe path component`);
  const files = new Map<string, JsonLinesFile>();
  const file = (stageIndex: number, name: string): JsonLinesFile => {
    const path = join(root, run, "stages", String(stageIndex), name);
    let f = files.get(path);
    if (f === undefined) {
      f = new JsonLinesFile(path, syncIntervalMs);
      files.set(path, f);
    }
    return f;
  };
  const append = (stageIndex: number, name: string, text: string): boolean => {
    if (text === "") return true;
    try {
      file(stageIndex, name).append(text);
      return true;
    } catch (err) {
      onError(err);
      return false;
    }
  };
  return {
    gate: (stageIndex, events) => append(stageIndex, "taint_audit.jsonl", events.map(formatAuditLine).join("")),
    decision: (stageIndex, record) => append(stageIndex, "decisions.jsonl", `${JSON.stringify(record)}\n`),
    flush: () => {
      for (const f of files.values()) f.sync();
    },
    close: () => {
      for (const f of files.values()) f.close();
    },
  };
}
