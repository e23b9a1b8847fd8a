// A policy rollout reaching a running Run (docs/operations.md, "Rolling out a policy"), with the real API server,
// the operator and a real sidecar process: a stricter LeviathPolicy in `warn` changes no decision of the running Run
// and reports each would-flip (the audit, the metric, the Run's status); new Runs still pin the generation in force;
// switched to `enforce`, the same sidecar (never restarted) then enforces it. A malformed rollout snapshot named
// by the status changes nothing.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricValue, scrapeMetrics } from "../cli/sidecar-harness.ts";
import { readDecisionRecords, startOperatorWithPinnedRun, type PinnedRunFixture } from "./sidecar-fixtures.ts";
import { kubectl, testCluster, waitFor } from "./harness/index.ts";
import { applyPolicy, createRun, OURS, waitForCustom, type Custom } from "./controller/operator-harness.ts";

const RUN = "rolled";
let fx: PinnedRunFixture;
let namespace = "";

const decisions = () => readDecisionRecords(fx.auditDir);
type Rollout = { enforced?: { generation: number; snapshot: string; snapshotSha256: string }; candidate?: { generation: number; enforcement: string; snapshot: string; snapshotSha256: string } };
const rolloutOf = (r: Custom) => r.status?.policyRollout as Rollout | undefined;
const policyObject = async () => (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { metadata: { generation: number }; status?: { enforcement?: string; inForce?: { generation: number } } };
const read = (id: string) => fx.client.callTool({ id, tool: "read_file", args: { path: "notes.md" }, entry: { region: "files", id } });

beforeAll(async () => {
  fx = await startOperatorWithPinnedRun({ prefix: "rollout-sidecar", run: RUN, policy: { toolPermissions: { shell: "ask" } }, sidecarArgs: ["--metrics-listen", "127.0.0.1:0"] });
  namespace = fx.namespace;
}, 120_000);

afterAll(async () => {
  await fx?.stop();
});

describe("a policy rollout reaching a running Run's sidecar", () => {
  let enforcedGeneration = 0;

  it("in warn, changes no decision and reports the would-flip: audit record, metric, the Run's status", async () => {
    expect(await read("before")).toMatchObject({ decision: "allow" });
    enforcedGeneration = (await policyObject()).metadata.generation;
    await applyPolicy({ enforcement: "warn", toolPermissions: { shell: "ask", read_file: "deny" } });
    const candidateGeneration = (await policyObject()).metadata.generation;
    const run = await waitForCustom("runs", namespace, RUN, (r) => rolloutOf(r)?.candidate?.generation === candidateGeneration, "the candidate named on the Run");
    expect(rolloutOf(run)).toEqual({ candidate: expect.objectContaining({ enforcement: "warn", snapshot: `${RUN}-policy-candidate` }) });
    await waitFor(async () => (fx.sc.stderr().includes(`the candidate LeviathPolicy generation ${candidateGeneration} is now decided`) ? true : undefined), { timeoutMs: 30_000, description: "the sidecar to take the candidate" });

    expect(await read("during-warn")).toMatchObject({ decision: "allow", result: expect.stringContaining("notes") });
    const flip = decisions().find((r) => r["decision"] === "would_flip" && r["call_id"] === "during-warn");
    expect(flip).toMatchObject({
      tool_name: "read_file", decision_source: "policy_candidate", agent_id: RUN, stage: "main",
      would_flip: { enforcement: "warn", policy_generation: candidateGeneration, now: "allow", candidate: "deny", differs: expect.stringContaining("-> permission-denied") },
    });
    expect(decisions().some((r) => r["call_id"] === "during-warn" && r["decision"] === "allow")).toBe(true);
    expect(metricValue(await scrapeMetrics(fx.sc), "leviath_sidecar_policy_flips_total", { mode: "warn", from: "allow", to: "deny" })).toBe(1);
    const reported = await waitForCustom("runs", namespace, RUN, (r) => (r.status?.policyFlips as { count?: number } | undefined)?.count === 1, "the flip on the Run's status");
    expect(reported.status?.policyFlips).toMatchObject({ generation: candidateGeneration, last: expect.stringContaining("read_file") });
    // warn surfaces it on the Run: the condition, and its first True as a Warning Event.
    const flagged = await waitForCustom("runs", namespace, RUN, (r) => (r.status?.conditions as { type: string; status: string }[] | undefined)?.some((c) => c.type === "PolicyWouldFlip" && c.status === "True") === true, "the PolicyWouldFlip condition");
    expect((flagged.status?.conditions as { type: string; message: string }[]).find((c) => c.type === "PolicyWouldFlip")?.message).toContain(`1 call(s) would be decided otherwise under the warn candidate, LeviathPolicy generation ${candidateGeneration}`);
    await waitFor(async () => {
      const events = JSON.parse((await kubectl(["get", "events", "-n", namespace, "-o", "json"])).stdout) as { items: { reason?: string; type?: string; involvedObject?: { name?: string } }[] };
      return events.items.some((e) => e.reason === "WouldFlip" && e.type === "Warning" && e.involvedObject?.name === RUN) ? true : undefined;
    }, { timeoutMs: 30_000, description: "the WouldFlip Event on the Run" });
    // The policy in force for new Runs stays the enforced generation.
    expect((await policyObject()).status).toMatchObject({ enforcement: "warn", inForce: { generation: enforcedGeneration } });
    await createRun(namespace, "newcomer", { agentRef: { name: "reader" } });
    const newcomer = await waitForCustom("runs", namespace, "newcomer", (r) => r.status?.policy !== undefined, "the new Run pinned");
    expect(newcomer.status?.policy).toMatchObject({ generation: enforcedGeneration });
  });

  it("leaves enforcement alone when a rollout snapshot named by the status is malformed", async () => {
    const text = "{ not json\n";
    await testCluster().core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `${RUN}-policy-forged` }, data: { "run-policy.json": text } } });
    const sha = createHash("sha256").update(text).digest("hex");
    // Pointing the sidecar at it needs the Run's status (the controller writes it back on its next pass).
    await kubectl(["patch", "run", RUN, "-n", namespace, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: { policyRollout: { enforced: { generation: 999, snapshot: `${RUN}-policy-forged`, snapshotSha256: sha } } } })]);
    await waitFor(async () => (fx.sc.stderr().includes("policy rollout: the enforced snapshot does not load; the one before stays") ? true : undefined), { timeoutMs: 30_000, description: "the sidecar to refuse the malformed snapshot" });
    expect(await read("after-forgery")).toMatchObject({ decision: "allow" });
    expect(metricValue(await scrapeMetrics(fx.sc), "leviath_sidecar_policy_rollout_failures_total", { role: "enforced" })).toBe(1);
  });

  it("switched to enforce, the same sidecar enforces it without a restart", async () => {
    const pid = fx.sc.proc.pid;
    await applyPolicy({ enforcement: "enforce", toolPermissions: { shell: "ask", read_file: "deny" } });
    const generation = (await policyObject()).metadata.generation;
    const run = await waitForCustom("runs", namespace, RUN, (r) => rolloutOf(r)?.enforced?.generation === generation && rolloutOf(r)?.candidate === undefined, "the enforced generation named on the Run");
    expect(rolloutOf(run)?.enforced?.snapshot).toBe(`${RUN}-policy-enforced`);
    await waitFor(async () => (fx.sc.stderr().includes(`the enforced LeviathPolicy generation ${generation} is now decided`) ? true : undefined), { timeoutMs: 30_000, description: "the sidecar to take the enforced generation" });
    expect(await read("after-enforce")).toMatchObject({ decision: "deny", code: "permission-denied" });
    expect(fx.sc.proc.pid).toBe(pid);
    expect(fx.sc.proc.exitCode).toBeNull();
    expect((await policyObject()).status).toMatchObject({ enforcement: "enforce", inForce: { generation } });
    const events = JSON.parse((await kubectl(["get", "events", "-A", "-o", "json"])).stdout) as { items: { reason?: string; note?: string; message?: string }[] };
    // Each change of the mode is an Event on the policy: the loosening to warn, the tightening back.
    expect(events.items.some((e) => e.reason === "EnforcementLoosened" && (e.note ?? e.message ?? "").includes(`enforce -> warn`))).toBe(true);
    expect(events.items.some((e) => e.reason === "EnforcementTightened" && (e.note ?? e.message ?? "").includes("warn -> enforce"))).toBe(true);
  });
});
