import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REFUSALS } from "../../api/sidecar-contract.ts";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { ShellExecutor } from "../executors/shell.ts";
import type { DecisionRecord } from "../storage/audit-writer.ts";
import { buildEnforcement } from "./enforcement.ts";
import { SeedService } from "./seed-service.ts";

// A seed is one audit record; a seed whose record cannot be written is refused (fail closed), and that refusal is
// the `audit-failed` row's: outcome, code and message, as every other refusal is its row's.
const workdir = realpathSync(mkdtempSync(join(tmpdir(), "leviath-seed-service-")));
writeFileSync(join(workdir, "notes.md"), "notes\n");
afterAll(() => rmSync(workdir, { recursive: true, force: true }));

const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };
const policy = RunPolicySchema.parse({
  agent: { key: "ns/app", name: "app" },
  stages: [{ name: "one", sandbox }],
  entryStage: "one",
  launch: { mode: "interactive", allow: [] },
  toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 },
});
const built = buildEnforcement(policy, { workdir, home: undefined });
if (!built.ok) throw new Error(built.error);
const enforcement = built.value;
const noShell: ShellExecutor = { label: "local", run: () => Promise.reject(new Error("no command seed here")) };

function setup(writes: boolean) {
  const records: DecisionRecord[] = [];
  const ledger = { record: (r: DecisionRecord) => (records.push(r), writes) };
  const service = new SeedService({
    workdir, blueprintRoot: undefined, fs: { realpath: (p) => realpathSync.native(p) }, shell: noShell, ledger,
    metrics: createSidecarMetrics(), clock: () => 1_700_000_000_000, runName: "app", stageIndex: () => 0,
  });
  return { service, records };
}

describe("SeedService", () => {
  it("fills a seed inside the workdir and records it", async () => {
    const { service, records } = setup(true);
    expect(await service.resolve("notes", { files: ["notes.md"] }, enforcement)).toMatchObject({ ok: true, content: "notes\n" });
    expect(records).toMatchObject([{ tool_name: "seed", decision: "allow", decision_source: "workdir" }]);
  });

  it("refuses a seed whose record cannot be written as its row says: unavailable, audit-failed, the seed's message", async () => {
    const { service, records } = setup(false);
    const r = await service.resolve("notes", { files: ["notes.md"] }, enforcement);
    expect(records).toHaveLength(1);
    expect(r).toEqual({
      ok: false, outcome: REFUSALS["audit-failed"].outcome, code: "audit-failed",
      message: "region 'notes': the seed's audit record could not be written, so the seed was not used",
    });
    expect(REFUSALS["audit-failed"].outcome).toBe("unavailable");
  });
});
