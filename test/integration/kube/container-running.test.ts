// The wait before a pods/exec, against the real API server and as the sidecar's own identity (a token of the
// Run's ServiceAccount, bound to the Role the controller makes): the Role lets it read exactly its Run's pods;
// a pod that is not running (there is no kubelet here, so none ever is) fails past the bound with a message
// naming the pod, the container and where it stands; a pod outside the Role fails at once, without waiting.
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKubeClient, type LibraryKubeClient } from "../../../src/kube/client.ts";
import { waitForContainerRunning } from "../../../src/kube/container-running.ts";
import { createPodExec } from "../../../src/kube/pod-exec.ts";
import { buildChildNames } from "../../../src/sandbox/names.ts";
import { buildRole, buildRoleBinding, buildServiceAccount } from "../../../src/sandbox/run-objects.ts";
import { applyObjects, createRestrictedNamespace, deleteNamespace, testCluster } from "../harness/index.ts";

const RUN = "wait-run";
const MINE = `${RUN}-sbx-0123456789abcdef`;
const NOT_YET = `${RUN}-sbx-fedcba9876543210`;
const OTHER = "someone-elses-pod";
let namespace = "";
let sidecar: LibraryKubeClient;

function pod(name: string) {
  return {
    metadata: { name },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" as const } },
      containers: [{ name: "sandbox", image: "busybox:1", command: ["sleep", "infinity"], securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } }],
    },
  };
}

beforeAll(async () => {
  namespace = await createRestrictedNamespace("exec-wait");
  const { core, kc } = testCluster();
  await core.createNamespacedPod({ namespace, body: pod(MINE) });
  await core.createNamespacedPod({ namespace, body: pod(OTHER) });
  const run = { name: RUN, namespace, uid: "00000000-0000-0000-0000-000000000000" };
  // Without the owner reference: there is no Run here, and the garbage collector would take them.
  const objects = [buildServiceAccount(run, "agent"), buildRole(run, "agent", [MINE, NOT_YET]), buildRoleBinding(run, "agent")]
    .map((o) => ({ ...o, metadata: { ...(o.metadata as object), ownerReferences: undefined } }));
  await applyObjects(objects as never);
  const token = await core.createNamespacedServiceAccountToken({ name: buildChildNames(RUN).serviceAccount, namespace, body: { spec: { expirationSeconds: 600 } } });
  const admin = kc.getCurrentCluster()!;
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [admin], users: [{ name: "sidecar", token: token.status!.token }],
    contexts: [{ name: "sidecar", cluster: admin.name, user: "sidecar" }], currentContext: "sidecar",
  });
  sidecar = createKubeClient(config);
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

describe("waiting for a sandbox container before pods/exec", () => {
  it("reads its own Run's pod, and fails past the bound naming the pod, the container and where it stands", async () => {
    const started = Date.now();
    await expect(waitForContainerRunning(sidecar, { namespace, pod: MINE, container: "sandbox" }, { timeoutMs: 1500 }))
      .rejects.toThrow(`container 'sandbox' of pod '${namespace}/${MINE}' is not running after 2 s (Pending, not scheduled to a node yet)`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
  });

  it("waits for a pod of its Run that does not exist yet, saying so past the bound", async () => {
    await expect(waitForContainerRunning(sidecar, { namespace, pod: NOT_YET, container: "sandbox" }, { timeoutMs: 1000 }))
      .rejects.toThrow(`container 'sandbox' of pod '${namespace}/${NOT_YET}' is not running after 1 s (the pod does not exist yet)`);
  });

  it("fails at once for a container the pod does not have", async () => {
    await expect(waitForContainerRunning(sidecar, { namespace, pod: MINE, container: "agent" }, { timeoutMs: 60_000 }))
      .rejects.toThrow(`container 'agent' of pod '${namespace}/${MINE}' will not run: the pod has no such container`);
  });

  it("fails at once, without waiting, for a pod outside its Role (forbidden is not a race)", async () => {
    const started = Date.now();
    await expect(waitForContainerRunning(sidecar, { namespace, pod: OTHER, container: "sandbox" }, { timeoutMs: 60_000 }))
      .rejects.toThrow(/^container 'sandbox' of pod '[^']+\/someone-elses-pod': reading the pod failed: .*forbidden/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("is what createPodExec does before it opens the exec stream", async () => {
    const exec = createPodExec(sidecar, 1000);
    await expect(exec.exec(namespace, MINE, "sandbox", ["true"], null, null, null, false))
      .rejects.toThrow(`container 'sandbox' of pod '${namespace}/${MINE}' is not running after 1 s (Pending, not scheduled to a node yet)`);
  });
});
