// The run's audit trail (DESIGN.md §5): the gate's events with upstream's field names, appended as JSON Lines
// per run and stage at `<root>/<run>/stages/<n>/taint_audit.jsonl` (upstream rewrites a JSON array at
// `runs/<run>/stages/<n>/taint_audit.json`), and beside it `decisions.jsonl`, one line per decision the sidecar
// made (permission, read paths, workdir and the gate), which upstream has no equivalent of.
import { join } from "node:path";
import type { DecisionSourceName } from "../../api/decision-sources.ts";
import { formatAuditLine, type AuditEvent } from "../../policy/gate-audit.ts";
import { JsonLinesFile } from "./json-lines-file.ts";

/** One line of `decisions.jsonl`. */
export interface DecisionRecord {
  readonly timestamp: number;
  readonly agent_id: string;
  readonly call_id: string;
  readonly tool_name: string;
  readonly stage: string;
  /**
   * `resume`: not a tool call, the switch to a resumed run's re-resolved grants (`read_paths_resumed`). `stage`:
   * the run entered `stage` from `from_stage` (recorded in the audit of the stage entered).
   */
  readonly decision: "allow" | "deny" | "ask" | "resume" | "stage" | "would_flip";
  readonly decision_source: DecisionSourceName;
  readonly code?: string;
  /** The paths as requested (never file contents). */
  readonly paths?: readonly string[];
  /** Who answered the prompt this decision followed (an Approval's admission-set `spec.approvedBy`). */
  readonly approved_by?: string;
  /** The reason the answer gave. */
  readonly approval_reason?: string;
  /** On the refusal of a call whose client gave up (`client-gave-up`): how it gave up (`cancelled`, `connection_closed`). */
  readonly gave_up?: string;
  /** With `gave_up`: the pending prompt that was withdrawn (closed unanswered). */
  readonly withdrawn_approval_id?: string;
  /** The context's integrity when the integrity step looked at the call (issue 40). */
  readonly integrity?: "trusted" | "untrusted";
  /** Why the integrity step held the call (untrusted-target, untrusted-context, unlisted-target), whatever then let it through. */
  readonly integrity_hold?: string;
  /** The entry that made the context untrusted, or the one the held argument's value came from. */
  readonly untrusted_entry?: { readonly region: string; readonly id: string; readonly tool?: string };
  /** The argument whose value came from untrusted text. */
  readonly untrusted_argument?: string;
  /** Each argument's provenance (trusted, untrusted, none), when the integrity step computed it. */
  readonly args_provenance?: Readonly<Record<string, string>>;
  /** On the record of an "allow for this run" approval: what a restart may restore from the state journal. */
  readonly grant_scope?: "run";
  /** SHA-256 (hex) of the permission key the approval covers (never the command itself). */
  readonly grant_key_sha256?: string;
  /** On a `resume` record: what the re-resolution changed and against which policy generation. */
  readonly read_paths_resumed?: {
    readonly sequence: number;
    readonly policy_generation?: number;
    readonly added: readonly string[];
    readonly removed: readonly string[];
    readonly allow_blueprint_read_paths: boolean;
  };
  /**
   * On a `would_flip` record (not a decision: the call was decided under the policy in force, recorded beside it):
   * how a warn or audit candidate LeviathPolicy would have decided it, and what the two decisions rest on.
   */
  readonly would_flip?: {
    readonly enforcement: "warn" | "audit";
    readonly policy_generation: number;
    readonly target?: string;
    readonly now: "allow" | "ask" | "deny";
    readonly candidate: "allow" | "ask" | "deny";
    readonly differs: string;
  };
  /** On a `stage` record, and on the refusal of a transition: the stage left (or not left). */
  readonly from_stage?: string;
  /** On a seed record (`tool_name: "seed"`): which region, which form, and what it read or ran (never contents). */
  readonly seed?: SeedAuditFields;
}

/** The seed half of a seed resolution's record (sidecar/core/seed-service.ts). */
export interface SeedAuditFields {
  readonly region: string;
  readonly form: "files" | "glob" | "rhai" | "command";
  /** `filled`, `refused` (a check said no), `failed` (allowed, but unreadable or a command that failed). */
  readonly outcome: "filled" | "refused" | "failed";
  /** The files read, each with where the fence placed it (`workdir`, `granted`, `blueprint`). */
  readonly sources?: readonly { readonly path: string; readonly origin: string }[];
  /** A command seed: the `[safe_commands]` prefix that covered it, the stage whose sandbox ran it, its exit code. */
  readonly safe_command_prefix?: string;
  readonly sandbox_stage?: string;
  readonly exit_code?: number | null;
  /** The label the content got. */
  readonly label?: string;
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

/** The files of one stage's audit. */
type AuditFileName = "taint_audit.jsonl" | "decisions.jsonl";

/** The audit files of one run under `root`. */
export function createAuditWriter(root: string, run: string, onError: (err: unknown) => void, syncIntervalMs?: number): AuditSink {
  if (!isSafeRunName(run)) throw new Error(`run name '${run}' is not a safe path component`);
  // By stage index, then file name: looked up on every record, so no path is built after a file's first use.
  const stages = new Map<number, Partial<Record<AuditFileName, JsonLinesFile>>>();
  const file = (stageIndex: number, name: AuditFileName): JsonLinesFile => {
    let stage = stages.get(stageIndex);
    if (stage === undefined) stages.set(stageIndex, (stage = {}));
    return (stage[name] ??= new JsonLinesFile(join(root, run, "stages", String(stageIndex), name), syncIntervalMs));
  };
  const all = () => [...stages.values()].flatMap((stage) => Object.values(stage));
  const append = (stageIndex: number, name: AuditFileName, text: string): boolean => {
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
      for (const f of all()) f.sync();
    },
    close: () => {
      for (const f of all()) f.close();
    },
  };
}
