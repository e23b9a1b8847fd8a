import { describe, expect, it } from "vitest";
import { computeChunkDigest, describeIgnoredChunks, readVerifiedAudit, recordChunkDigest, verifyChunk } from "./audit-digests.ts";

describe("the sidecar's record of its audit ConfigMaps", () => {
  const entry = computeChunkDigest("r-audit-000", "a\nb é\n");

  it("vouches for the text it recorded, or the recorded prefix of a longer one, and for nothing else", () => {
    expect(entry.bytes).toBe(7);
    expect(verifyChunk(entry, "a\nb é\n")).toEqual({ verified: "a\nb é\n", extraBytes: 0 });
    expect(verifyChunk(entry, "a\nb é\nc\n")).toEqual({ verified: "a\nb é\n", extraBytes: 2 });
    for (const text of ["a\nb e\n", "a\n", "", undefined, "x\nb é\n"]) expect(verifyChunk(entry, text)).toEqual({ verified: undefined, extraBytes: 0 });
  });

  it("keeps one entry per name, in the order the chunks were first written", () => {
    const grown = computeChunkDigest("r-audit-000", "a\nb é\nc\n");
    const next = computeChunkDigest("r-audit-001", "d\n");
    expect(recordChunkDigest(recordChunkDigest([entry], next), grown)).toEqual([grown, next]);
  });

  it("reads only verified text as the Run's audit, and names every chunk it did not show", () => {
    const second = computeChunkDigest("r-audit-001", "c\n");
    const third = computeChunkDigest("r-audit-002", "d\n");
    const found = new Map<string, string | undefined>([
      ["r-audit-000", "a\nb é\nforged\n"], ["r-audit-001", "c-changed\n"], ["r-audit-031", "planted\n"],
    ]);
    const chunks = readVerifiedAudit([entry, second, third], found);
    expect(chunks).toEqual([
      { name: "r-audit-000", text: "a\nb é\n", extraBytes: 7 },
      { name: "r-audit-001", refused: "mismatch" },
      { name: "r-audit-002", refused: "missing" },
      { name: "r-audit-031", refused: "unrecorded" },
    ]);
    expect(describeIgnoredChunks(chunks)).toBe("audit ConfigMaps ignored: 7 byte(s) at the end of 'r-audit-000' are not covered by status.audit; "
      + "'r-audit-001' does not hold what the sidecar wrote (its SHA-256 in status.audit differs); 'r-audit-002' is missing; "
      + "'r-audit-031' was not written by the Run's sidecar (not in status.audit)");
    expect(describeIgnoredChunks(readVerifiedAudit([entry], new Map([["r-audit-000", "a\nb é\n"]])))).toBeUndefined();
  });
});
