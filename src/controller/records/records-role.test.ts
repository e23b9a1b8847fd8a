import { describe, expect, it } from "vitest";
import type { RunStatus } from "../../api/status.ts";
import { buildRecordsRole, listRunRecordNames, MAX_RECORD_NAMES, type RecordsRun } from "./records-role.ts";

const SHA = "a".repeat(64);
const chunk = (name: string) => ({ name, bytes: 10, sha256: SHA });
const run = (name: string, status: RunStatus | undefined, created = "2026-12-06T10:00:00Z"): RecordsRun => ({ metadata: { name, creationTimestamp: created }, status });

describe("the leviath-run-records Role", () => {
  it("names a Run's snapshot once pinned, each audit chunk its sidecar recorded and its result's ConfigMap", () => {
    expect(listRunRecordNames(run("r1", undefined))).toEqual([]);
    const status = { snapshotSha256: SHA, audit: { chunks: [chunk("r1-audit-000"), chunk("r1-audit-001")] }, result: { configMapName: "r1-result" } } as unknown as RunStatus;
    expect(listRunRecordNames(run("r1", status))).toEqual(["r1-policy", "r1-audit-000", "r1-audit-001", "r1-result"]);
  });

  it("grants nothing for a status naming any other ConfigMap (the admin's, another Run's, a chunk past the bound)", () => {
    const status = { audit: { chunks: [chunk("team-notes"), chunk("r2-audit-000"), chunk("r1-audit-032"), chunk("r1-audit-000")] }, result: { configMapName: "team-notes" } } as unknown as RunStatus;
    expect(listRunRecordNames(run("r1", status))).toEqual(["r1-audit-000"]);
  });

  it("has no rule when there is nothing to grant: a rule without names would grant every ConfigMap", () => {
    expect(buildRecordsRole("team", []).rules).toEqual([]);
    expect(buildRecordsRole("team", [run("r1", undefined)]).rules).toEqual([]);
    const role = buildRecordsRole("team", [run("r1", { snapshotSha256: SHA } as RunStatus)]);
    expect(role.rules).toEqual([{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: ["r1-policy"] }]);
    expect(role.metadata).toMatchObject({ name: "leviath-run-records", namespace: "team" });
  });

  it("lists the newest Runs' records first, up to its bound, and none of a Run being deleted", () => {
    const pinned = { snapshotSha256: SHA } as RunStatus;
    const runs = Array.from({ length: MAX_RECORD_NAMES + 2 }, (_, i) => run(`r${i}`, pinned, new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString()));
    const names = buildRecordsRole("team", runs).rules[0]!.resourceNames;
    expect(names).toHaveLength(MAX_RECORD_NAMES);
    expect(names).toContain(`r${MAX_RECORD_NAMES + 1}-policy`);
    expect(names).not.toContain("r0-policy");
    const going = { ...run("gone", pinned), metadata: { name: "gone", deletionTimestamp: "2026-12-06T11:00:00Z" } };
    expect(buildRecordsRole("team", [going]).rules).toEqual([]);
  });
});
