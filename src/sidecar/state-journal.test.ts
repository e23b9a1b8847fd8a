import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateJournal, replayStateJournal } from "./state-journal.ts";

const tmp = () => mkdtempSync(join(tmpdir(), "leviath-records-"));

describe("the state journal", () => {
  it("replays labels, evictions, clears, raises, grants and the stage, skipping a torn line", () => {
    const text = [
      '{"op":"label","region":"r","id":"1","level":"private"}',
      '{"op":"label","region":"r","id":"2","level":"internal"}',
      '{"op":"label","region":"notes","id":"n","level":"private"}',
      '{"op":"evict","region":"r","id":"1"}',
      '{"op":"clear","region":"notes"}',
      '{"op":"raise","tool":"shell"}',
      '{"op":"grant","key":"write_file"}',
      '{"op":"stage","index":2}',
      '{"op":"label","region":"r","id"',
    ].join("\n");
    expect(replayStateJournal(text)).toEqual({
      entries: [{ region: "r", entryId: "2", level: "internal" }], raises: ["shell"], grants: ["write_file"], stageIndex: 2, skipped: 1,
    });
  });

  it("survives a reopen, compacted", () => {
    const root = tmp();
    const first = openStateJournal(root, "run");
    first.journal.record({ op: "label", region: "r", id: "1", level: "private" });
    first.journal.record({ op: "label", region: "r", id: "2", level: "public" });
    first.journal.record({ op: "evict", region: "r", id: "2" });
    first.journal.close();
    const second = openStateJournal(root, "run");
    expect(second.restored.entries).toEqual([{ region: "r", entryId: "1", level: "private" }]);
    second.journal.close();
    expect(readFileSync(join(root, "run", "state.jsonl"), "utf8")).toBe('{"op":"label","region":"r","id":"1","level":"private"}\n');
  });
});
