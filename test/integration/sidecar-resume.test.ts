// A resumed Run's sidecar, as a real process against the real API server and the operator: a read outside the
// workdir is refused, the admin grants it, someone resumes the Run, and the same sidecar (no restart) switches to
// the re-resolved snapshot: the read is allowed (Private, as a granted read is), the taint, the pending prompt and
// the audit carry on, and the audit records the switch with what was added and the policy generation. A status
// that points the sidecar at a snapshot loosening anything but the grants is refused and the policy stays.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { readDecisionRecords, startOperatorWithPinnedRun, type PinnedRunFixture } from "./sidecar-fixtures.ts";
import { kubectl, testCluster, waitFor } from "./harness/index.ts";
import { applyPolicy, OURS, waitForCustom, type Custom } from "./controller/operator-harness.ts";

const RUN = "long-read";
let fx: PinnedRunFixture;
let namespace = "";
let root = "";
let shared = "";

const decisions = () => readDecisionRecords(fx.auditDir);
const resumeOf = (r: Custom) => r.status?.resume as { token: string; outcome: string; snapshot?: string; snapshotSha256?: string; policyGeneration?: number } | undefined;
const generation = async () => ((await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { metadata: { generation: number } }).metadata.generation;

beforeAll(async () => {
  fx = await startOperatorWithPinnedRun({
    prefix: "resume-sidecar", run: RUN, policy: { toolPermissions: { shell: "ask" }, security: { taintTracking: true } },
    prepare: (at) => {
      shared = join(at, "shared");
      mkdirSync(shared);
      writeFileSync(join(shared, "design.md"), "the design\n");
      return { readPaths: { allow: [shared] } };
    },
  });
  ({ namespace, root } = fx);
}, 120_000);

afterAll(async () => {
  await fx?.stop();
});

describe("a resumed Run's sidecar", () => {
  it("switches to the re-resolved grants in place: the refused read is allowed, taint, prompt and audit carry on", async () => {
    const path = join(shared, "design.md");
    expect(await fx.client.callTool({ id: "inside", tool: "read_file", args: { path: "notes.md" }, entry: { region: "files", id: "notes" } })).toMatchObject({ decision: "allow", label: "internal", taint: "internal" });
    expect(await fx.client.callTool({ id: "before", tool: "read_file", args: { path } })).toMatchObject({ decision: "deny", code: "not-granted" });
    expect(await fx.client.callTool({ id: "held", tool: "shell", args: { command: "id" } })).toMatchObject({ decision: "ask" });
    await waitForCustom("runs", namespace, RUN, (r) => (r.status?.gateDecisions as Record<string, number> | undefined)?.["read_path"] === 1, "the refused read reported");

    await applyPolicy({ toolPermissions: { shell: "allow" }, security: { taintTracking: true }, readPaths: { perAgent: { [`${namespace}/reader`]: [shared] } } });
    await kubectl(["annotate", "run", RUN, "-n", namespace, "leviath.dev/resume=after-grant", "--overwrite"]);
    const resumed = resumeOf(await waitForCustom("runs", namespace, RUN, (r) => resumeOf(r)?.token === "after-grant", "the resume answered"))!;
    expect(resumed).toMatchObject({ outcome: "Resumed", snapshot: `${RUN}-policy-r01`, policyGeneration: await generation() });

    await waitFor(async () => (fx.sc.stderr().includes("switched to the resumed run's re-resolved read-path grants") ? true : undefined), { timeoutMs: 30_000, description: "the sidecar to switch to the resumed snapshot" });
    // The context kept its labels across the switch.
    const taint = await fetch(`${fx.sc.url}/v1/context/taint`, { headers: { authorization: `Bearer ${fx.sc.runtimeToken}` } });
    expect(await taint.json()).toMatchObject({ tracking: true, level: "internal", regions: [{ region: "files", level: "internal" }] });
    const after = await fx.client.callTool({ id: "after-1", tool: "read_file", args: { path } });
    expect(after).toMatchObject({ decision: "allow", label: "private", result: expect.stringContaining("the design") });
    // The prompt raised before the resume still waits (the resume did not take the loosened shell permission).
    const approvals = await fetch(`${fx.sc.url}/v1/approvals`, { headers: { authorization: `Bearer ${fx.sc.runtimeToken}` } });
    expect(((await approvals.json()) as { approvals: { callId: string }[] }).approvals.map((a) => a.callId)).toEqual(["held"]);
    expect(await fx.client.callTool({ id: "again", tool: "shell", args: { command: "id" } })).toMatchObject({ decision: "ask" });

    const records = decisions();
    const refused = records.findIndex((r) => r["call_id"] === "before");
    const switched = records.findIndex((r) => r["decision"] === "resume");
    expect(refused).toBeGreaterThanOrEqual(0);
    expect(switched).toBeGreaterThan(refused);
    expect(records[switched]).toMatchObject({
      call_id: "resume-1", tool_name: "read_paths", decision_source: "read_path_resume", code: "grants-reresolved", agent_id: RUN, stage: "main",
      read_paths_resumed: { sequence: 1, policy_generation: resumed.policyGeneration, added: [shared], removed: [], allow_blueprint_read_paths: false },
    });
    expect(records.some((r) => r["call_id"] === "after-1" && r["decision"] === "allow")).toBe(true);
  });

  it("refuses a snapshot, pointed at by the status, that loosens more than the grants", async () => {
    const base = JSON.parse(readFileSync(join(root, "run-policy.json"), "utf8")) as Record<string, unknown> & { toolPermissions: { ceiling: Record<string, string> }; readPaths: Record<string, unknown> };
    const wider = { ...base, toolPermissions: { ...base.toolPermissions, ceiling: { shell: "allow" } }, readPaths: { ...base.readPaths, granted: [shared], resumed: { sequence: 2 } } };
    const text = `${JSON.stringify(wider)}\n`;
    await testCluster().core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `${RUN}-policy-r02` }, data: { "run-policy.json": text } } });
    const sha = createHash("sha256").update(text).digest("hex");
    await kubectl(["patch", "run", RUN, "-n", namespace, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: { resume: { snapshot: `${RUN}-policy-r02`, snapshotSha256: sha, sequence: 2 } } })]);
    await waitFor(async () => (fx.sc.stderr().includes(`resumed snapshot '${RUN}-policy-r02' refused: it changes 'toolPermissions'`) ? true : undefined), { timeoutMs: 20_000, description: "the sidecar to refuse the wider snapshot" });
    expect(await fx.client.callTool({ id: "still-asks", tool: "shell", args: { command: "id" } })).toMatchObject({ decision: "ask" });
    expect(decisions().filter((r) => r["decision"] === "resume")).toHaveLength(1);
  });
});
