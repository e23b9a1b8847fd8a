// What a new user's kubectl shows of an Agent and a Run, against the real API server: the Ready condition
// kstatus and `kubectl wait` read (with Stalled for a failure), the reason column of `kubectl get`, Events in
// `kubectl get events` and `kubectl describe` (one object per event, repeats counted as a series), and the
// PodSecurityEnforced condition of a Run in a namespace that does not enforce `restricted`.
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, REPO_ROOT, testCluster, uniqueName, waitFor } from "../harness/index.ts";
import { conditionOf, createAgent, createRun, OURS, waitForCustom, startTestOperator, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let loose = "";
let op: TestOperator;
/** kstatus itself (sigs.k8s.io/cli-utils, what Flux's health checks run), built by scripts/kstatus-bin. */
let kstatusBin = "";

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("ready");
  loose = uniqueName("baseline");
  await testCluster().core.createNamespace({ body: { metadata: { name: loose, labels: { "pod-security.kubernetes.io/enforce": "baseline" } } } });
  op = await startTestOperator();
  kstatusBin = execFileSync("bash", [join(REPO_ROOT, "scripts/kstatus-bin")], { encoding: "utf8", timeout: 900_000 }).trim();
}, 960_000);

/** kstatus's verdict on one of our objects as the API server holds it now: Current, InProgress, Failed, ... */
async function kstatusOf(kind: string, ns: string, name: string): Promise<string> {
  const obj = (await kubectl(["get", kind, name, "-n", ns, "-o", "json"])).stdout;
  const r = spawnSync(kstatusBin, [], { input: obj, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`kstatus: ${r.stderr}`);
  return r.stdout.split("\t")[0]!;
}

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  for (const ns of [namespace, loose]) if (ns) await deleteNamespace(ns);
});

type CoreEvent = { type: string; reason: string; message: string; action?: string; reportingComponent?: string; series?: { count: number }; involvedObject: { kind: string; name: string; uid?: string } };

/** The events of one object, as `kubectl get events` lists them (the core/v1 view of events.k8s.io/v1). */
async function eventsOf(ns: string, kind: string, name: string): Promise<CoreEvent[]> {
  const out = await kubectl(["get", "events", "-n", ns, "--field-selector", `involvedObject.kind=${kind},involvedObject.name=${name}`, "-o", "json"]);
  return (JSON.parse(out.stdout) as { items: CoreEvent[] }).items;
}

function waitForEvent(ns: string, kind: string, name: string, check: (e: CoreEvent) => boolean, description: string): Promise<CoreEvent> {
  return waitFor(async () => (await eventsOf(ns, kind, name)).find(check), { timeoutMs: 30_000, description });
}

describe("an Agent", () => {
  it("is Ready for kubectl wait, shows its reason in kubectl get, and records an Event", async () => {
    await createAgent(namespace, "fine", { image: "r:1" });
    const waited = await kubectl(["wait", "-n", namespace, "--for=condition=Ready", "agent/fine", "--timeout=30s"]);
    expect(waited.stdout).toContain("agent.leviath.dev/fine condition met");
    const table = await kubectl(["get", "agent", "fine", "-n", namespace]);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+READY\s+REASON\s+READS\s+STAGES\s+AGE$/);
    expect(table.stdout.split("\n")[1]).toMatch(/^fine\s+True\s+Valid\s+/);
    const event = await waitForEvent(namespace, "Agent", "fine", (e) => e.reason === "Valid", "the Valid event");
    expect(event).toMatchObject({ type: "Normal", message: "valid", action: "Validate", reportingComponent: "leviath-operator" });
    expect(await kstatusOf("agent", namespace, "fine")).toBe("Current");
  });

  it("that is invalid is Ready=False and Stalled (kstatus: Failed), with a Warning naming the field", async () => {
    await createAgent(namespace, "broken", { image: "r:1", readPaths: { allow: ["regex:.*"] } });
    await kubectl(["wait", "-n", namespace, "--for=condition=Stalled", "agent/broken", "--timeout=30s"]);
    const agent = await waitForCustom("agents", namespace, "broken", (a) => conditionOf(a, "Ready") !== undefined, "Ready");
    expect(conditionOf(agent, "Ready")).toMatchObject({ status: "False", reason: "InvalidSpec" });
    expect((agent.status?.conditions as { observedGeneration?: number }[]).every((c) => c.observedGeneration === 1)).toBe(true);
    const event = await waitForEvent(namespace, "Agent", "broken", (e) => e.reason === "InvalidSpec", "the InvalidSpec event");
    expect(event.type).toBe("Warning");
    expect(event.message).toContain("spec.readPaths.allow[0]");
    expect(await kstatusOf("agent", namespace, "broken")).toBe("Failed");
    const described = await kubectl(["describe", "agent", "broken", "-n", namespace]);
    expect(described.stdout).toMatch(/Warning\s+InvalidSpec\s+.*leviath-operator\s+spec\.readPaths\.allow\[0\]/);
  });
});

describe("a Run", () => {
  it("without a node fails at its sandbox deadline: Stalled for kubectl wait, the reason in kubectl get, the story in its Events", async () => {
    await createAgent(namespace, "boxed", { image: "r:1", sandbox: { kind: "container", image: "alpine:3" } });
    await createRun(namespace, "nonode", { agentRef: { name: "boxed" }, deadlines: { sandboxReadySeconds: 3 } });
    await kubectl(["wait", "-n", namespace, "--for=condition=Stalled", "run/nonode", "--timeout=30s"]);
    // Ready never turns True for a failed Run: kubectl wait on it gives up (exit 1) instead of reporting success.
    const notReady = await kubectl(["wait", "-n", namespace, "--for=condition=Ready", "run/nonode", "--timeout=2s"], { allowFailure: true });
    expect(notReady.exitCode).not.toBe(0);
    expect(await kstatusOf("run", namespace, "nonode")).toBe("Failed");
    const table = await kubectl(["get", "run", "nonode", "-n", namespace]);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+AGENT\s+PHASE\s+REASON\s+STAGE\s+TAINT\s+AGE$/);
    expect(table.stdout.split("\n")[1]).toMatch(/^nonode\s+boxed\s+Failed\s+SandboxUnavailable\s+/);
    const events = await waitFor(async () => {
      const list = await eventsOf(namespace, "Run", "nonode");
      return list.some((e) => e.reason === "SandboxUnavailable") ? list : undefined;
    }, { timeoutMs: 30_000, description: "the Run's events" });
    expect(events.map((e) => [e.type, e.reason])).toEqual([["Normal", "WaitingForPods"], ["Warning", "SandboxUnavailable"]]);
    expect(events[1]!.message).toMatch(/^the run is Failed: sandbox unavailable: sandbox pod 'nonode-sbx-[0-9a-f]{16}' not ready within 3s$/);
    const listed = await kubectl(["get", "events", "-n", namespace, "--field-selector", "involvedObject.name=nonode"]);
    expect(listed.stdout).toMatch(/Warning\s+SandboxUnavailable\s+run\/nonode\s+the run is Failed/);
  });

  it("waiting for its Agent is Reconciling with reason AgentNotFound, then runs on once the Agent exists", async () => {
    await createRun(namespace, "early", { agentRef: { name: "later" } });
    await kubectl(["wait", "-n", namespace, "--for=jsonpath={.status.conditions[?(@.type==\"Reconciling\")].reason}=AgentNotFound", "run/early", "--timeout=30s"]);
    const event = await waitForEvent(namespace, "Run", "early", (e) => e.reason === "AgentNotFound", "the AgentNotFound event");
    expect(event.type).toBe("Warning");
    expect(event.message).toBe(`Agent 'later' not found in namespace '${namespace}'`);
    expect(await kstatusOf("run", namespace, "early")).toBe("InProgress");
    await createAgent(namespace, "later", { image: "r:1" });
    await waitForEvent(namespace, "Run", "early", (e) => e.reason === "WaitingForPods", "the WaitingForPods event");
  });

  it("in a namespace that does not enforce restricted says so in a condition and a Warning, until the namespace is labelled", async () => {
    await createAgent(loose, "plain", { image: "r:1" });
    await createRun(loose, "exposed", { agentRef: { name: "plain" } });
    const run = await waitForCustom("runs", loose, "exposed", (r) => conditionOf(r, "PodSecurityEnforced") !== undefined, "PodSecurityEnforced");
    expect(conditionOf(run, "PodSecurityEnforced")).toMatchObject({ status: "False", reason: "NamespaceNotRestricted" });
    expect(conditionOf(run, "PodSecurityEnforced")?.message).toContain(`kubectl label namespace ${loose} pod-security.kubernetes.io/enforce=restricted`);
    const event = await waitForEvent(loose, "Run", "exposed", (e) => e.reason === "NamespaceNotRestricted", "the NamespaceNotRestricted event");
    expect(event.type).toBe("Warning");
    await kubectl(["label", "namespace", loose, "pod-security.kubernetes.io/enforce=restricted", "--overwrite"]);
    const labelled = await waitForCustom("runs", loose, "exposed", (r) => conditionOf(r, "PodSecurityEnforced")?.status === "True", "PodSecurityEnforced=True after labelling");
    expect(conditionOf(labelled, "PodSecurityEnforced")?.reason).toBe("Restricted");
  });

  it("whose pods the API server keeps refusing records one FailedCreate Event with a growing series count", async () => {
    const quota = uniqueName("quota");
    await testCluster().core.createNamespace({ body: { metadata: { name: quota, labels: { "pod-security.kubernetes.io/enforce": "restricted" } } } });
    try {
      await testCluster().core.createNamespacedResourceQuota({ namespace: quota, body: { metadata: { name: "no-pods" }, spec: { hard: { pods: "0" } } } });
      await waitFor(() => testCluster().core.readNamespacedServiceAccount({ name: "default", namespace: quota }), { timeoutMs: 60_000, description: "the default service account" });
      await createAgent(quota, "plain", { image: "r:1" });
      await createRun(quota, "refused", { agentRef: { name: "plain" } });
      // The second refusal comes from the controller's second pass (its backoff starts at 200 ms); each pass writes
      // several children and a status first, which on a loaded CI machine took longer than 30 s once. The count is
      // patched as soon as that second refusal is recorded; a timeout names the events seen.
      const event = await waitFor(async () => {
        const failed = (await eventsOf(quota, "Run", "refused")).filter((e) => e.reason === "FailedCreate");
        const series = failed.find((e) => (e.series?.count ?? 1) >= 2);
        if (!series) throw new Error(`FailedCreate events so far: ${JSON.stringify(failed.map((e) => ({ count: e.series?.count ?? 1, message: e.message })))}`);
        return series;
      }, { timeoutMs: 90_000, description: "a FailedCreate series (count 2 is written at once)" });
      expect(event.type).toBe("Warning");
      expect(event.message).toContain("exceeded quota: no-pods");
      const failed = (await eventsOf(quota, "Run", "refused")).filter((e) => e.reason === "FailedCreate");
      expect(failed).toHaveLength(1);
      // The quota's refusal (403) is the reason of ChildrenFailure; the server's text is its message, as on the status.
      const run = await waitForCustom("runs", quota, "refused", (r) => conditionOf(r, "ChildrenFailure") !== undefined, "ChildrenFailure on the Run");
      expect(conditionOf(run, "ChildrenFailure")?.reason).toBe("Forbidden");
      expect(conditionOf(run, "ChildrenFailure")?.message).toContain("exceeded quota: no-pods");
    } finally {
      await deleteNamespace(quota);
    }
  }, 180_000);
});
