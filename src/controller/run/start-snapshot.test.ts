import { describe, expect, it } from "vitest";
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import { checkStartSnapshot } from "./start-snapshot.ts";

const data = { "run-policy.json": "{\"a\":1}\n", "runtime.json": "{}\n", "controller.json": "{}\n" };

describe("the start snapshot's checks", () => {
  it("digests every key and value in key order, so a moved byte or a renamed key changes it", () => {
    const d = computeSnapshotDataSha256(data);
    expect(d).toMatch(/^[0-9a-f]{64}$/);
    expect(computeSnapshotDataSha256({ "runtime.json": "{}\n", "controller.json": "{}\n", "run-policy.json": "{\"a\":1}\n" })).toBe(d);
    expect(computeSnapshotDataSha256({ ...data, "run-policy.json": "{\"a\":2}\n" })).not.toBe(d);
    expect(computeSnapshotDataSha256({ "run-policy.json": "{\"a\":1}\n", "runtime.json": "{}\n", "controller.jso": "n{}\n" })).not.toBe(d);
  });

  it("accepts the snapshot just resolved or the one whose digest is on record, and nothing else", () => {
    expect(checkStartSnapshot("r-policy", data, { resolved: { ...data } })).toBeUndefined();
    expect(checkStartSnapshot("r-policy", data, { sha256: computeSnapshotDataSha256(data) })).toBeUndefined();
    expect(checkStartSnapshot("r-policy", data, { resolved: { ...data, "runtime.json": "[]\n" } })).toMatch(/is not the snapshot this Run resolved/);
    expect(checkStartSnapshot("r-policy", { ...data, "run-policy.json": "{}\n" }, { sha256: computeSnapshotDataSha256(data) })).toMatch(/no longer holds the snapshot pinned at start/);
    expect(checkStartSnapshot("r-policy", data, { neverPinned: true })).toMatch(/is not the snapshot this Run resolved/);
    expect(checkStartSnapshot("r-policy", undefined, {})).toBe("ConfigMap 'r-policy' holds no data");
  });
});
