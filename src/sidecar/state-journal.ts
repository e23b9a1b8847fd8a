// What the sidecar must not forget across a restart: the context labels (forgetting them would lower the
// taint while the runtime still holds the data: a restart must never be an allow), the session clearance
// raises, the run-scoped approval grants and the current stage. Kept as a JSON Lines journal of operations
// at `<root>/<run>/state.jsonl`, replayed at start and then compacted. Upstream keeps none of this.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { LabelledEntry } from "../policy/context-taint.ts";
import { JsonLinesFile } from "./json-lines-file.ts";

const LevelSchema = z.enum(["public", "internal", "private"]);

/** One journalled operation. */
export const StateOpSchema = z.discriminatedUnion("op", [
  z.object({ op: z.literal("label"), region: z.string(), id: z.string(), level: LevelSchema }),
  z.object({ op: z.literal("evict"), region: z.string(), id: z.string() }),
  z.object({ op: z.literal("clear"), region: z.string() }),
  z.object({ op: z.literal("raise"), tool: z.string() }),
  z.object({ op: z.literal("grant"), key: z.string() }),
  z.object({ op: z.literal("stage"), index: z.number().int().min(0) }),
]);
/** One journalled operation. */
export type StateOp = z.infer<typeof StateOpSchema>;

/** The state a journal replays to. */
export interface RestoredState {
  readonly entries: readonly LabelledEntry[];
  readonly raises: readonly string[];
  readonly grants: readonly string[];
  readonly stageIndex: number | undefined;
  /** Lines that were not a valid operation (a line cut short by a crash, at most). */
  readonly skipped: number;
}

/** Replays journal text; invalid lines are skipped and counted. */
export function replayStateJournal(text: string): RestoredState {
  const labels = new Map<string, LabelledEntry>();
  const raises = new Set<string>();
  const grants = new Set<string>();
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
    if (op.op === "label") labels.set(key(op.region, op.id), { region: op.region, entryId: op.id, level: op.level });
    else if (op.op === "evict") labels.delete(key(op.region, op.id));
    else if (op.op === "clear") {
      for (const [k, e] of labels) if (e.region === op.region) labels.delete(k);
    } else if (op.op === "raise") raises.add(op.tool);
    else if (op.op === "grant") grants.add(op.key);
    else stageIndex = op.index;
  }
  return { entries: [...labels.values()], raises: [...raises], grants: [...grants], stageIndex, skipped };
}

/** The operations that rebuild a state (used to compact the journal). */
export function buildStateOps(state: Omit<RestoredState, "skipped">): StateOp[] {
  return [
    ...state.entries.map((e): StateOp => ({ op: "label", region: e.region, id: e.entryId, level: e.level })),
    ...state.raises.map((tool): StateOp => ({ op: "raise", tool })),
    ...state.grants.map((key): StateOp => ({ op: "grant", key })),
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

/** Opens (and compacts) the journal of a run, returning what it held. */
export function openStateJournal(root: string, run: string, syncIntervalMs?: number): { journal: StateJournal; restored: RestoredState } {
  const path = join(root, run, "state.jsonl");
  const restored = existsSync(path) ? replayStateJournal(readFileSync(path, "utf8")) : replayStateJournal("");
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
