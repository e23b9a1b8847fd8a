import { describe, expect, it } from "vitest";
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import { ANNOTATION } from "../../sandbox/names.ts";
import { checkPoolBinding, readBoundRun, type PoolBindingInput } from "./pool-binding.ts";

const data = { "run-policy.json": "{\"p\":1}\n", "runtime.json": "{\"task\":\"t\"}\n", "controller.json": "{}\n" };
const good: PoolBindingInput = {
  podName: "notes-pool-0a1b2c3d4e",
  annotations: { [ANNOTATION.boundRun]: "r1", [ANNOTATION.boundRunUid]: "uid-1" },
  run: { metadata: { name: "r1", uid: "uid-1" }, status: { enginePod: "notes-pool-0a1b2c3d4e", startedFrom: "pool", snapshotSha256: computeSnapshotDataSha256(data) } },
  snapshot: data,
};

describe("checkPoolBinding", () => {
  it("binds to the Run its annotations name when the Run names this pod and the snapshot matches its digest", () => {
    expect(checkPoolBinding(good)).toEqual({ ok: true, run: "r1", runUid: "uid-1", data, read: good.run });
  });

  it("is not bound without both annotations", () => {
    expect(readBoundRun({ [ANNOTATION.boundRun]: "r1" })).toBeUndefined();
    expect(checkPoolBinding({ ...good, annotations: undefined })).toMatchObject({ ok: false, reason: expect.stringContaining("names no Run") });
  });

  it("fails closed on a Run of another uid, one that does not name this pod, or one not started from the pool", () => {
    expect(checkPoolBinding({ ...good, run: { ...good.run, metadata: { name: "r1", uid: "uid-2" } } })).toMatchObject({ ok: false, reason: expect.stringContaining("not the one the pod was bound to") });
    expect(checkPoolBinding({ ...good, run: { ...good.run, status: { ...good.run!.status, enginePod: "other" } } })).toMatchObject({ ok: false, reason: expect.stringContaining("does not name this pod") });
    expect(checkPoolBinding({ ...good, run: { ...good.run, status: { ...good.run!.status, startedFrom: "cold" } } })).toMatchObject({ ok: false });
    expect(checkPoolBinding({ ...good, run: undefined })).toMatchObject({ ok: false, reason: "the Run 'r1' cannot be read" });
  });

  it("fails closed on a snapshot that is missing, altered, or lacks a key", () => {
    expect(checkPoolBinding({ ...good, snapshot: undefined })).toMatchObject({ ok: false, reason: "the snapshot 'r1-policy' cannot be read" });
    expect(checkPoolBinding({ ...good, snapshot: { ...data, "run-policy.json": "{\"p\":2}\n" } })).toMatchObject({ ok: false, reason: expect.stringContaining("does not hash") });
    const partial = { "run-policy.json": data["run-policy.json"], "controller.json": "{}\n" };
    const run = { ...good.run, status: { ...good.run!.status, snapshotSha256: computeSnapshotDataSha256(partial) } };
    expect(checkPoolBinding({ ...good, run, snapshot: partial })).toMatchObject({ ok: false, reason: "the snapshot 'r1-policy' has no runtime.json" });
    expect(checkPoolBinding({ ...good, run: { ...good.run, status: { ...good.run!.status, snapshotSha256: undefined } } })).toMatchObject({ ok: false, reason: expect.stringContaining("no status.snapshotSha256") });
  });
});
