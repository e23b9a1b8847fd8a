// What a Run says while it waits, reconciled by the operator against the real API server: the prompts its sidecar
// reports pending, each named with its id, tool and target in AwaitingApproval with the command that answers it;
// and a pod the scheduler could not place (its verdict written on the pod's status as kube-scheduler writes it:
// no scheduler runs here), with the Run's own workspace claim named when it is not bound to a volume, in the
// PodsWaiting condition, Ready's reason (kubectl get's REASON column) and a Warning Event.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIDECAR_FIELD_MANAGER } from "../../../src/api/constants.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, uniqueName, waitFor } from "../harness/index.ts";
import { childrenOf, conditionOf, createAgent, createRun, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;
const volume = uniqueName("ws-volume");
const RUN = "stuck";

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("waiting");
  op = await startTestOperator();
  await createAgent(namespace, "host", { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "none" }, stages: [{ name: "main" }] });
  await createRun(namespace, RUN, { agentRef: { name: "host" } });
  await waitFor(async () => (await childrenOf(namespace, RUN)).some((c) => c.ref === `Pod/${RUN}-engine`), { description: "the engine pod" });
});

afterAll(async () => {
  await op?.stop();
  if (namespace) await deleteNamespace(namespace);
  await testCluster().core.deletePersistentVolume({ name: volume }).catch(() => undefined);
});

const waitForRun = (check: (run: Custom) => boolean, description: string) => waitForCustom("runs", namespace, RUN, check, description);

/** Writes the scheduler's verdict on the engine pod, as kube-scheduler does (PodScheduled on the status). */
async function schedulerSays(status: "True" | "False", message?: string): Promise<void> {
  const condition = { type: "PodScheduled", status, ...(message ? { reason: "Unschedulable", message } : {}), lastTransitionTime: new Date().toISOString() };
  await kubectl(["patch", "pod", `${RUN}-engine`, "-n", namespace, "--subresource=status", "--type=strategic", "-p", JSON.stringify({ status: { conditions: [condition] } })]);
}

describe("a Run waiting on a pod nobody can place", () => {
  it("names its unbound workspace claim, then the scheduler's own words once the claim is bound, and clears when placed", async () => {
    await schedulerSays("False", "0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available.");
    const unbound = await waitForRun((r) => conditionOf(r, "PodsWaiting")?.reason === "ClaimNotBound", "PodsWaiting ClaimNotBound");
    expect(conditionOf(unbound, "PodsWaiting")?.message).toMatch(new RegExp(`^claim '${RUN}-workspace' is Pending, bound to no volume \\(storage class \\(the cluster's default\\)\\); pod '${RUN}-engine' cannot be scheduled \\(Unschedulable: 0/1 nodes are available: 1 pod has unbound immediate`));
    expect(conditionOf(unbound, "Ready")).toMatchObject({ status: "False", reason: "ClaimNotBound" });
    expect((await kubectl(["get", "run", RUN, "-n", namespace])).stdout.split("\n")[1]).toMatch(new RegExp(`^${RUN}\\s+host\\s+Pending\\s+ClaimNotBound\\s`));

    // A volume for the claim: kube-controller-manager binds them.
    await testCluster().core.createPersistentVolume({ body: {
      metadata: { name: volume },
      spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], hostPath: { path: "/tmp/leviath-test-unused" }, claimRef: { namespace, name: `${RUN}-workspace` } },
    } });
    await waitFor(async () => ((await testCluster().core.readNamespacedPersistentVolumeClaim({ namespace, name: `${RUN}-workspace` })).status?.phase === "Bound" ? true : undefined), { description: "the claim bound" });
    await schedulerSays("False", "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}.");
    // The claim's binding alone makes a pass that still reads the scheduler's earlier words under the new reason;
    // the pass after the pod's new status carries the new ones.
    const tainted = await waitForRun((r) => conditionOf(r, "PodsWaiting")?.reason === "Unschedulable" && (conditionOf(r, "PodsWaiting")?.message ?? "").includes("untolerated taint"), "PodsWaiting Unschedulable with the scheduler's new words");
    expect(conditionOf(tainted, "PodsWaiting")).toMatchObject({ status: "True", message: `pod '${RUN}-engine' cannot be scheduled (Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}.)` });
    expect(conditionOf(tainted, "Ready")).toMatchObject({ reason: "Unschedulable", message: conditionOf(tainted, "PodsWaiting")?.message });
    const events = await waitFor(async () => {
      const out = await kubectl(["get", "events", "-n", namespace, "--field-selector", `involvedObject.kind=Run,involvedObject.name=${RUN}`, "-o", "json"]);
      const items = (JSON.parse(out.stdout) as { items: { type: string; reason: string; message: string }[] }).items;
      return items.some((e) => e.reason === "Unschedulable") ? items : undefined;
    }, { description: "the Unschedulable event" });
    // One Event per change of reason (the claim may be bound before the scheduler's new words are read).
    expect(events.find((e) => e.reason === "Unschedulable")).toMatchObject({ type: "Warning", message: expect.stringContaining(`pod '${RUN}-engine' cannot be scheduled`) });
    expect(events.find((e) => e.reason === "ClaimNotBound")).toMatchObject({ type: "Warning", message: expect.stringContaining(`claim '${RUN}-workspace' is Pending`) });

    await schedulerSays("True");
    const placed = await waitForRun((r) => conditionOf(r, "PodsWaiting") === undefined, "PodsWaiting gone");
    expect(conditionOf(placed, "Ready")?.reason).toBe("WaitingForPods");
  });
});

describe("a Run whose sidecar reports a pending prompt", () => {
  it("names its id, tool and target in AwaitingApproval, with the command that answers it", async () => {
    const pendingApprovals = [{ id: "tool-c1", kind: "tool_approval", tool: "shell", target: "ls docs/", stage: "main", prompt: "Allow shell command: ls docs/", raisedAt: new Date().toISOString() }];
    const body = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace }, status: { pendingApprovals } };
    await kubectl(["apply", "--server-side", `--field-manager=${SIDECAR_FIELD_MANAGER}`, "--subresource=status", "-f", "-"], { input: JSON.stringify(body) });
    const run = await waitForRun((r) => conditionOf(r, "AwaitingApproval")?.status === "True", "AwaitingApproval True");
    expect(conditionOf(run, "AwaitingApproval")).toMatchObject({
      reason: "PendingApproval",
      message: `prompt 'tool-c1' (shell "ls docs/", stage main) waits; answer with 'kubectl leviath approve ${RUN} tool-c1 --once' (or --deny)`,
    });
  });
});
