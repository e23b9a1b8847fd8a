// What the sidecar must not forget across a restart: the context labels (forgetting them would lower the
// taint while the runtime still holds the data: a restart must never be an allow), the session clearance
// raises, the run-scoped approval grants and the current stage. Kept as a JSON Lines journal of operations
// at `<root>/<run>/state.jsonl`, replayed at start and then compacted. Upstream keeps none of this.
// The journal is not trusted to loosen anything: a raise or a grant is honoured after a restart only when the
// run's audit holds the decision that made it (written before the journal line, so a crash between the two
// loses the grant rather than inventing one). A line nobody decided grants nothing.
import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { LabelledEntry } from "../../policy/context-taint.ts";
import { canonicalToolName } from "../../policy/permissions.ts";
import { JsonLinesFile } from "./json-lines-file.ts";

const LevelSchema = z.enum(["public", "internal", "private"]);

/** One journalled operation. */
export const StateOpSchema = z.discriminatedUnion("op", [
  // `untrusted`: the entry's integrity label (issue 40; absent: trusted), with the tool whose result it is.
  z.object({ op: z.literal("label"), region: z.string(), id: z.string(), level: LevelSchema, untrusted: z.literal(true).optional(), tool: z.string().optional() }),
  z.object({ op: z.literal("evict"), region: z.string(), id: z.string() }),
  z.object({ op: z.literal("clear"), region: z.string() }),
  z.object({ op: z.literal("raise"), tool: z.string() }),
  // `call`: the call whose approval granted it (its audited decision record carries the key's digest).
  z.object({ op: z.literal("grant"), key: z.string(), call: z.string().optional() }),
  z.object({ op: z.literal("stage"), index: z.number().int().min(0) }),
]);
/** One journalled operation. */
export type StateOp = z.infer<typeof StateOpSchema>;

/** The state a journal replays to. */
export interface RestoredState {
  readonly entries: readonly LabelledEntry[];
  readonly raises: readonly string[];
  readonly grants: readonly JournalGrant[];
  readonly stageIndex: number | undefined;
  /** Lines that were not a valid operation (a line cut short by a crash, at most). */
  readonly skipped: number;
  /** Raises and grants dropped because no audited decision made them (filled by {@link checkAgainstAudit}). */
  readonly dropped?: { readonly raise: number; readonly grant: number };
}

/** A run-scoped approval grant and the call whose approval made it. */
export interface JournalGrant {
  readonly key: string;
  readonly call: string | undefined;
}

/** What the run's audit proves was decided: approvals for the run and "allow for this session" answers. */
export interface AuditEvidence {
  /** Call id, `sha256(key)` and canonical tool of each audited allow-for-run approval. */
  readonly grants: ReadonlySet<string>;
  /** Tools an audited `UserAlwaysAllow` gate answer raised. */
  readonly raises: ReadonlySet<string>;
}

/** The decision-record fields that tie an allow-for-run approval to the grant it journals. */
export function buildGrantAuditFields(key: string): { grant_scope: "run"; grant_key_sha256: string } {
  return { grant_scope: "run", grant_key_sha256: createHash("sha256").update(key).digest("hex") };
}

// Call id, key digest and canonical tool: a forged line must match all three of one audited approval.
const evidenceKey = (call: string, digest: string, tool: string) => `${call}\u0000${digest}\u0000${tool}`;
const keyTool = (key: string) => key.split("\u0000")[0] ?? key;

/** Keeps the raises and grants the audit proves; labels (which only tighten), evictions and the stage stay. */
export function checkAgainstAudit(state: RestoredState, evidence: AuditEvidence): RestoredState {
  const raises = state.raises.filter((tool) => evidence.raises.has(tool));
  const audited = state.grants.filter((g) => g.call !== undefined && evidence.grants.has(evidenceKey(g.call, buildGrantAuditFields(g.key).grant_key_sha256, keyTool(g.key))));
  // One line per key is kept: an unaudited line for a key that an audited one also grants changes nothing.
  const grants = [...new Map(audited.map((g) => [g.key, g])).values()];
  return { ...state, raises, grants, dropped: { raise: state.raises.length - raises.length, grant: state.grants.length - audited.length } };
}

const DecisionEvidenceSchema = z.object({
  call_id: z.string(), tool_name: z.string(), decision: z.literal("allow"), decision_source: z.literal("user_approved"),
  grant_scope: z.literal("run"), grant_key_sha256: z.string(),
});
const GateEvidenceSchema = z.object({ tool_name: z.string(), allowed: z.literal(true), decision_source: z.literal("UserAlwaysAllow") });

function readLines(path: string, marker: string): unknown[] {
  if (!existsSync(path)) return [];
  const out: unknown[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    // Only lines that can be evidence are parsed: the audit of a long run is mostly other records.
    if (!line.includes(marker)) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // A torn line proves nothing.
    }
  }
  return out;
}

/** Reads the evidence in every stage's `decisions.jsonl` and `taint_audit.jsonl` of a run. */
export function readAuditEvidence(root: string, run: string): AuditEvidence {
  const grants = new Set<string>();
  const raises = new Set<string>();
  const stages = join(root, run, "stages");
  for (const stage of existsSync(stages) ? readdirSync(stages) : []) {
    for (const raw of readLines(join(stages, stage, "decisions.jsonl"), "grant_key_sha256")) {
      const r = DecisionEvidenceSchema.safeParse(raw);
      if (r.success) grants.add(evidenceKey(r.data.call_id, r.data.grant_key_sha256, canonicalToolName(r.data.tool_name)));
    }
    for (const raw of readLines(join(stages, stage, "taint_audit.jsonl"), "UserAlwaysAllow")) {
      const r = GateEvidenceSchema.safeParse(raw);
      if (r.success) raises.add(r.data.tool_name);
    }
  }
  return { grants, raises };
}

/** A label line over the entry's previous one: an untrusted entry stays untrusted until it is evicted. */
function buildRestoredLabel(op: Extract<StateOp, { op: "label" }>, previous: LabelledEntry | undefined): LabelledEntry {
  const untrusted = op.untrusted === true || previous?.untrusted === true;
  const tool = op.untrusted === true ? op.tool : previous?.tool;
  return { region: op.region, entryId: op.id, level: op.level, ...(untrusted ? { untrusted: true, ...(tool === undefined ? {} : { tool }) } : {}) };
}

/** Replays journal text; invalid lines are skipped and counted. */
export function replayStateJournal(text: string): RestoredState {
  const labels = new Map<string, LabelledEntry>();
  const raises = new Set<string>();
  const grants = new Map<string, JournalGrant>();
  let stageIndex: number | undefined;
  let skipped = 0;
  const key = (region: string, id: string) => JSON.stringify([region, id]);
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let parsed: ReturnType<typeof StateOpSchema.safeParse>;
    try {
      parsed = StateOpSchema.safeParse(JSON.parse(line));
    } catch {
      skipped++;
      continue;
    }
    if (!parsed.success) {
      skipped++;
      continue;
    }
    const op = parsed.data;
    if (op.op === "label") labels.set(key(op.region, op.id), buildRestoredLabel(op, labels.get(key(op.region, op.id))));
    else if (op.op === "evict") labels.delete(key(op.region, op.id));
    else if (op.op === "clear") {
      for (const [k, e] of labels) if (e.region === op.region) labels.delete(k);
    } else if (op.op === "raise") raises.add(op.tool);
    else if (op.op === "grant") grants.set(JSON.stringify([op.key, op.call]), { key: op.key, call: op.call });
    else stageIndex = op.index;
  }
  return { entries: [...labels.values()], raises: [...raises], grants: [...grants.values()], stageIndex, skipped };
}

/** The operations that rebuild a state (used to compact the journal). */
export function buildStateOps(state: Omit<RestoredState, "skipped" | "dropped">): StateOp[] {
  return [
    ...state.entries.map((e): StateOp => ({
      op: "label", region: e.region, id: e.entryId, level: e.level, ...(e.untrusted === true ? { untrusted: true, ...(e.tool === undefined ? {} : { tool: e.tool }) } : {}),
    })),
    ...state.raises.map((tool): StateOp => ({ op: "raise", tool })),
    ...state.grants.map((g): StateOp => ({ op: "grant", key: g.key, ...(g.call === undefined ? {} : { call: g.call }) })),
    ...(state.stageIndex === undefined ? [] : [{ op: "stage", index: state.stageIndex } satisfies StateOp]),
  ];
}

/** The journal of one run. */
export interface StateJournal {
  /** Appends an operation; false when it could not be written. */
  record(op: StateOp): boolean;
  flush(): void;
  close(): void;
}

/** Opens (and compacts) the journal of a run, returning what it held that the run's audit backs. */
export function openStateJournal(root: string, run: string, syncIntervalMs?: number): { journal: StateJournal; restored: RestoredState } {
  const path = join(root, run, "state.jsonl");
  const replayed = replayStateJournal(existsSync(path) ? readFileSync(path, "utf8") : "");
  // The compacted journal keeps only what was checked: a dropped line is warned about once, then gone.
  const restored = checkAgainstAudit(replayed, readAuditEvidence(root, run));
  if (existsSync(path)) {
    // Compact: write the replayed state to a new file, flush it, then atomically replace the old one.
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, buildStateOps(restored).map((op) => `${JSON.stringify(op)}\n`).join(""));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  }
  const file = new JsonLinesFile(path, syncIntervalMs);
  return {
    restored,
    journal: {
      record(op) {
        try {
          file.append(`${JSON.stringify(op)}\n`);
          return true;
        } catch {
          return false;
        }
      },
      flush: () => file.sync(),
      close: () => file.close(),
    },
  };
}
