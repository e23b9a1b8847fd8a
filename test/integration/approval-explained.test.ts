// Approvals that explain themselves, against the real API server, the controller and a real cluster-mode sidecar
// answering from its Run's relay: `kubectl get approvals` shows the prompt each answers and whether it is bound and
// matched (an Approval made before its Run, one with a wrong id, one applied, one that came too late), each of
// those is told by an Event (Warning when the answer answers nothing, saying why), and the sidecar reports what
// the pending call acts on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSidecarClient, type SidecarClient } from "../../src/runtime/sidecar-client.ts";
import { makeTempDir, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { applySidecarIdentity, buildTestApproval, createTestRun, GROUP, startApprovalCluster, type ApprovalCluster } from "./approval-cluster.ts";
import { kubectl, testCluster, waitFor } from "./harness/index.ts";
import { createSandboxPod, startClusterSidecar, waitForConsumed, writeSidecarKubeconfig } from "./sidecar-fixtures.ts";

const RUN = "explained";
let cluster: ApprovalCluster | undefined;
let sc: SidecarProcess | undefined;
let client: SidecarClient;
let namespace = "";

type Row = Record<string, string>;
type CoreEvent = { type: string; reason: string; message: string };

const createApproval = (name: string, approvalId: string) =>
  testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", body: buildTestApproval(name, RUN, approvalId, "test") });

/** `kubectl get approvals` as rows keyed by the header's words. */
async function approvalTable(): Promise<Row[]> {
  const [header, ...lines] = (await kubectl(["get", "approvals", "-n", namespace])).stdout.trimEnd().split("\n");
  // Cut at the header's column starts: an empty cell is blank, not the next column's value.
  const starts = [...header!.matchAll(/\S+/g)].map((m) => [m[0], m.index] as const);
  return lines.map((l) => Object.fromEntries(starts.map(([name, at], i) => [name, l.slice(at, starts[i + 1]?.[1] ?? l.length).trim()])));
}

const eventsOf = async (name: string): Promise<CoreEvent[]> => {
  const out = await kubectl(["get", "events", "-n", namespace, "--field-selector", `involvedObject.kind=Approval,involvedObject.name=${name}`, "-o", "json"]);
  return (JSON.parse(out.stdout) as { items: CoreEvent[] }).items;
};
const waitForEvent = (name: string, reason: string) =>
  waitFor(async () => (await eventsOf(name)).find((e) => e.reason === reason), { timeoutMs: 30_000, description: `the ${reason} event of Approval ${name}` });
const readRun = async () => (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: { pendingApprovals?: { id: string; target?: string }[] } };

beforeAll(async () => {
  cluster = await startApprovalCluster("explained");
  namespace = cluster.namespace;
  // Made before its Run exists: it never answers that Run's prompts.
  await createApproval("early", "gate-s1");
  await waitFor(async () => ((await approvalTable()).find((r) => r["NAME"] === "early")?.["BOUND"] === "RunNotFound" ? true : undefined), { description: "early: RunNotFound" });
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const uid = await createTestRun(namespace, RUN);
  await applySidecarIdentity(namespace, RUN, uid, [await createSandboxPod(namespace, RUN)]);
  const root = makeTempDir("leviath-approval-explained-");
  ({ sc } = await startClusterSidecar(root, RUN, namespace, await writeSidecarKubeconfig(root, namespace, RUN), ["--exec-wait-seconds", "2"]));
  client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 30_000 });
}, 120_000);

afterAll(() => cluster?.stop(sc));

describe("Approvals", () => {
  it("show in kubectl get the prompt they answer, whether they are bound and matched, and say why in Events", async () => {
    expect(await client.callTool({ id: "r1", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "allow" });
    expect(await client.callTool({ id: "s1", tool: "shell", args: { command: "ls docs/" } })).toMatchObject({ decision: "ask", approvalId: "gate-s1" });
    const pending = await waitFor(async () => (await readRun()).status?.pendingApprovals?.[0], { description: "the prompt on the Run" });
    expect(pending).toMatchObject({ id: "gate-s1", target: "ls docs/" });

    await createApproval("wrong", "gate-s9");
    await createApproval("right", "gate-s1");
    expect((await waitForConsumed(namespace, "right")).message).toBe("applied: allowOnce");
    expect(await client.waitForCall("s1", "shell", 60)).toMatchObject({ decision: "allow" });
    // Answers the same prompt again, after it was answered: the sidecar consumes it without applying anything.
    await createApproval("late", "gate-s1");
    expect((await waitForConsumed(namespace, "late")).message).toBe("no pending prompt 'gate-s1' (already answered or expired)");

    const rows = await waitFor(async () => {
      const t = await approvalTable();
      const by = (n: string) => t.find((r) => r["NAME"] === n);
      return by("early")?.["BOUND"] === "PredatesRun" && by("wrong")?.["MATCHED"] === "NotApplied" && by("right")?.["MATCHED"] === "Consumed" && by("late")?.["MATCHED"] === "NotApplied" ? t : undefined;
    }, { description: "the Approvals' columns" });
    expect(Object.keys(rows[0]!)).toEqual(["NAME", "RUN", "PROMPT", "DECISION", "BOUND", "MATCHED", "AGE"]);
    expect(rows.find((r) => r["NAME"] === "wrong")).toMatchObject({ RUN, PROMPT: "gate-s9", DECISION: "allowOnce", BOUND: "BoundToRun" });
    expect(rows.find((r) => r["NAME"] === "early")).toMatchObject({ PROMPT: "gate-s1", MATCHED: "" });

    expect(await waitForEvent("early", "PredatesRun")).toMatchObject({ type: "Warning", message: expect.stringMatching(/^Bound: created before Run 'explained' \(uid [-0-9a-f]+\) existed; it never answers that Run's prompts$/) });
    // A wrong id is told as soon as the controller binds it, and again once the sidecar consumed it unapplied.
    expect(await waitForEvent("wrong", "NoPendingPrompt")).toMatchObject({ type: "Warning", message: "Matched: Run 'explained' has no pending prompt 'gate-s9' (answered, expired or never asked)" });
    expect(await waitForEvent("wrong", "NotApplied")).toMatchObject({ type: "Warning", message: "Matched: no pending prompt 'gate-s9' (already answered or expired)" });
    expect(await waitForEvent("right", "BoundToRun")).toMatchObject({ type: "Normal" });
    expect(await waitForEvent("right", "Consumed")).toMatchObject({ type: "Normal", message: "Matched: applied: allowOnce" });
    expect(await waitForEvent("late", "NotApplied")).toMatchObject({ type: "Warning", message: "Matched: no pending prompt 'gate-s1' (already answered or expired)" });
    const wide = (await kubectl(["get", "approval", "wrong", "-n", namespace, "-o", "wide"])).stdout;
    expect(wide.split("\n")[0]).toMatch(/\bBY\s+MESSAGE\b/);
    expect(wide).toContain("no pending prompt 'gate-s9'");
  });
});
