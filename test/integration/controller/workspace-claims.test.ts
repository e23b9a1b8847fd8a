// Which volume a Run works in and where, against the real API server (issue 29, item 1). The workspace is mounted
// read-write into the sidecar, the agent and every sandbox pod, so a Run's creator who names the claim behind the
// admin's read-path volume, another Run's workspace or any claim of the namespace, or mounts it over the sidecar's
// own code (`/app/bin`), would step around the grants and the taint gate. Each refusal names the field and the
// claim, and no pod is created; a claim the policy lists is used, at the path asked for under /workspace.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorkspaceClaim } from "../../../src/sandbox/run-objects.ts";
import { createRestrictedNamespace, deleteNamespace, expectApiError, installCrds, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { kubectlAs } from "./chart-edit-role.ts";
import {
  applyPolicy, childrenOf, conditionOf, createAgent, createRun, OURS, patchCustom, readCustom, startTestOperator, waitForCustom, type Custom, type TestOperator,
} from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;
const PLANTER = "claim-planter";

/**
 * Plants `<run>-workspace` as PLANTER: exactly the claim the operator would make for the Run (its labels, its
 * controller owner reference naming the Run's uid), but for blockOwnerDeletion, which needs delete on the Run.
 */
async function plantClaim(run: string): Promise<string> {
  const uid = (await testCluster().custom.getNamespacedCustomObject({ ...OURS.runs, namespace, name: run }) as Custom).metadata!.uid!;
  const claim = buildWorkspaceClaim({ name: run, namespace, uid }, "notes", { size: "1Gi", accessMode: "ReadWriteOnce" });
  claim.metadata.ownerReferences = claim.metadata.ownerReferences!.map((r) => ({ ...r, blockOwnerDeletion: false }));
  const created = await kubectlAs(PLANTER, ["create", "-f", "-", "-o", "json"], JSON.stringify(claim));
  expect(created.exitCode, created.stderr).toBe(0);
  return (JSON.parse(created.stdout) as { metadata: { uid: string } }).metadata.uid;
}

/** The claims the Run's pods mount. */
const mountedClaims = async (run: string) => (await podsOf(run)).flatMap(({ obj }) => ((obj as unknown as PodView).spec.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : [])));

type PodView = { spec: { volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[]; containers: { volumeMounts?: { name: string; mountPath: string }[] }[] } };

async function createClaim(name: string): Promise<void> {
  await testCluster().core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: { metadata: { name }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } },
  });
}

const waitForRunStatus = (name: string, check: (r: Custom) => boolean, what: string) => waitForCustom("runs", namespace, name, check, what);
const podsOf = async (run: string) => (await childrenOf(namespace, run)).filter((c) => c.ref.startsWith("Pod/"));

/**
 * The Run, once refused with this message (or resolved, which the old code did: its children then show what it
 * got): it has no child at all, and is Pending with PolicyResolved False, this reason and this message.
 */
async function expectRefused(run: string, reason: string, message: string): Promise<void> {
  const decided = (r: Custom) => conditionOf(r, "PolicyResolved")?.message === message || conditionOf(r, "PolicyResolved")?.status === "True";
  const refused = await waitForRunStatus(run, decided, `Run ${run} to be refused: ${message}`);
  expect((await childrenOf(namespace, run)).map((c) => c.ref)).toEqual([]);
  expect(refused.status?.phase).toBe("Pending");
  expect(conditionOf(refused, "PolicyResolved")).toMatchObject({ status: "False", reason, message });
}

/**
 * The planted claim (its uid) is deleted, never mounted: the Run records the uid of the claim the operator made in
 * its place, and that is the one its pods mount.
 */
async function expectRemade(run: string, planted: string): Promise<void> {
  const name = `${run}-workspace`;
  const settled = await waitForRunStatus(run, (r) => typeof r.status?.["workspaceClaimUid"] === "string", `Run ${run} to record its own claim`);
  expect(settled.status?.["workspaceClaimUid"]).not.toBe(planted);
  const claim = await testCluster().core.readNamespacedPersistentVolumeClaim({ namespace, name });
  expect(claim.metadata?.uid).toBe(settled.status?.["workspaceClaimUid"]);
  await expect.poll(async () => (await podsOf(run)).length, { timeout: 30_000 }).toBeGreaterThan(0);
  for (const mounted of await mountedClaims(run)) expect(mounted).toBe(name);
}

/** The admin's policy: a read path backed by the claim `design-docs`, and the workspace claims it lists. */
const applyPolicyListing = (claims: string[]) => applyPolicy({
  readPaths: { volumes: [{ path: "/data/design", volume: { persistentVolumeClaim: { claimName: "design-docs" } } }] },
  ...(claims.length > 0 ? { ceilings: { workspaceClaims: claims.map((c) => `${namespace}/${c}`) } } : {}),
});

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("workspace");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  op = await startTestOperator();
  await createAgent(namespace, "notes", { sandbox: { kind: "container", image: "alpine:3" } });
  // The admin's read path, backed by a claim of the namespace: only the sidecar may mount it, read-only, behind grants.
  await createClaim("design-docs");
  await createClaim("team-scratch");
  await applyPolicyListing([]);
  // Someone who may create claims in the namespace, and nothing of the operator's kinds.
  await kubectl(["create", "role", "claim-maker", "-n", namespace, "--verb=create,get", "--resource=persistentvolumeclaims"]);
  await kubectl(["create", "rolebinding", "claim-maker", "-n", namespace, "--role=claim-maker", `--user=${PLANTER}`]);
});

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("a Run's workspace", () => {
  it("may not be mounted over the sidecar's code: the API server refuses mountPath /app/bin naming the field", async () => {
    for (const mountPath of ["/app/bin", "/usr/local/bin", "/workspace/../app/bin"]) {
      const err = await expectApiError(createRun(namespace, "over-bin", { agentRef: { name: "notes" }, workspace: { mountPath } }));
      expect(err.code).toBe(422);
      expect(err.message).toContain("spec.workspace.mountPath");
    }
    expect(await podsOf("over-bin")).toEqual([]);
  });

  it("may not be a claim the operator did not make for the Run unless the policy lists it", async () => {
    await createRun(namespace, "borrow", { agentRef: { name: "notes" }, workspace: { claimName: "team-scratch" } });
    await expectRefused("borrow", "RefusedByPolicy",
      `spec.workspace.claimName: PersistentVolumeClaim 'team-scratch' is not allowed by the LeviathPolicy (spec.ceilings.workspaceClaims has no '${namespace}/team-scratch'); leave claimName unset to work in a claim the operator makes for this Run`);
  });

  it("may not be the claim behind the policy's read-path volume, even where the policy lists it", async () => {
    const message = "spec.workspace.claimName: PersistentVolumeClaim 'design-docs' backs the LeviathPolicy's spec.readPaths.volumes[0]; a workspace never mounts a policy volume's claim";
    await createRun(namespace, "peek", { agentRef: { name: "notes" }, workspace: { claimName: "design-docs" } });
    await expectRefused("peek", "RefusedByPolicy", message);
    await applyPolicyListing(["design-docs"]);
    await createRun(namespace, "peek-listed", { agentRef: { name: "notes" }, workspace: { claimName: "design-docs" } });
    await expectRefused("peek-listed", "RefusedByPolicy", message);
  });

  it("may not be another Run's workspace: the claim the operator made for it, or a listed claim it works in", async () => {
    await applyPolicyListing(["first-workspace", "team-scratch"]);
    await createRun(namespace, "first", { agentRef: { name: "notes" } });
    await waitForRunStatus("first", () => true, "the first Run");
    await expect.poll(async () => (await childrenOf(namespace, "first")).map((c) => c.ref), { timeout: 30_000 }).toContain("PersistentVolumeClaim/first-workspace");
    await createRun(namespace, "second", { agentRef: { name: "notes" }, workspace: { claimName: "first-workspace" } });
    await expectRefused("second", "WorkspaceInUse", "spec.workspace.claimName: PersistentVolumeClaim 'first-workspace' is the workspace the operator made for Run 'first'");

    // `borrow` (refused above) now works in the listed claim, at a path under /workspace.
    await waitForRunStatus("borrow", (r) => conditionOf(r, "PolicyResolved")?.status === "True", "the listed claim to be used");
    await expect.poll(async () => (await podsOf("borrow")).length, { timeout: 30_000 }).toBeGreaterThan(0);
    for (const { obj } of await podsOf("borrow")) expect((obj as unknown as PodView).spec.volumes).toContainEqual({ name: "workspace", persistentVolumeClaim: { claimName: "team-scratch" } });
    await createRun(namespace, "third", { agentRef: { name: "notes" }, workspace: { claimName: "team-scratch" } });
    await expectRefused("third", "WorkspaceInUse", "spec.workspace.claimName: PersistentVolumeClaim 'team-scratch' is already the workspace of Run 'borrow'; the Run waits until that Run has finished");
    // Once `borrow` is over, the claim is free for the next Run (the refusal is looked at again).
    await patchCustom("runs", namespace, "borrow", { spec: { desiredState: "Cancelled" } });
    await waitForRunStatus("third", (r) => conditionOf(r, "PolicyResolved")?.status === "True", "the claim to be free once borrow is cancelled");
  });

  it("is refused when a claim the operator did not make holds the Run's own claim name", async () => {
    await createClaim("planted-workspace");
    await createRun(namespace, "planted", { agentRef: { name: "notes" } });
    await expectRefused("planted", "WorkspaceInUse", "spec.workspace: PersistentVolumeClaim 'planted-workspace' exists and was not made by the operator for this Run; the Run waits until it is gone");
  });

  it("is mounted where the Run asks under /workspace, in every pod, from the claim the operator made", async () => {
    await createRun(namespace, "nested", { agentRef: { name: "notes" }, workspace: { mountPath: "/workspace/repo" } });
    await expect.poll(async () => (await podsOf("nested")).length, { timeout: 30_000 }).toBe(2);
    for (const { obj } of await podsOf("nested")) {
      const pod = obj as unknown as PodView;
      expect(pod.spec.volumes).toContainEqual({ name: "workspace", persistentVolumeClaim: { claimName: "nested-workspace" } });
      for (const c of pod.spec.containers) expect(c.volumeMounts).toContainEqual({ name: "workspace", mountPath: "/workspace/repo" });
    }
  });

  it("is never a claim planted under the Run's own name while it waited unpinned, owner reference and labels included: it is deleted and the operator makes its own", async () => {
    await createRun(namespace, "victim", { agentRef: { name: "not-yet" } });
    await waitForRunStatus("victim", (r) => conditionOf(r, "PolicyResolved")?.reason === "AgentNotFound", "the Run to wait for its Agent");
    const planted = await plantClaim("victim");
    await createAgent(namespace, "not-yet", { sandbox: { kind: "container", image: "alpine:3" } });
    await expectRemade("victim", planted);
  });

  it("is never a claim planted after the Run was pinned and before the operator made its own: it is deleted and the operator makes its own", async () => {
    const enforcement = (spec: Record<string, unknown> | undefined) => testCluster().objects.patch(
      { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { networkEnforcement: spec ?? { verify: false } } },
      undefined, undefined, "leviath-test-enforcement", true, "application/apply-patch+yaml");
    await createAgent(namespace, "closed", { sandbox: { kind: "container", image: "alpine:3", network: false } });
    // Enforcement never verified here (no node runs the probe): the pinned Run waits before any child is written.
    await enforcement({ verify: true, namespace, probeTimeoutSeconds: 600, onUnverified: "refuse" });
    await createRun(namespace, "pinned", { agentRef: { name: "closed" } });
    await waitForRunStatus("pinned", (r) => typeof r.status?.["snapshotSha256"] === "string" && String(r.status?.message).includes("not verified"), "the Run pinned and waiting");
    expect((await childrenOf(namespace, "pinned")).map((c) => c.ref).filter((r) => r.startsWith("PersistentVolumeClaim/"))).toEqual([]);
    const planted = await plantClaim("pinned");
    await enforcement(undefined);
    // A pinned Run is not brought back by a policy change: poke it until a pass has met the claim.
    let pokes = 0;
    await waitFor(async () => {
      const r = await readCustom("runs", namespace, "pinned");
      if (typeof r.status?.["workspaceClaimUid"] === "string") return r;
      await patchCustom("runs", namespace, "pinned", { metadata: { annotations: { "test/poke": String(++pokes) } } });
      return undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "the Run to make its own claim" });
    await expectRemade("pinned", planted);
  });

  it("is not deleted when it does not name the Run: the Run waits, naming it, and the claim is left as it was", async () => {
    const claim = await testCluster().core.readNamespacedPersistentVolumeClaim({ namespace, name: "planted-workspace" });
    expect(claim.metadata?.deletionTimestamp).toBeUndefined();
    expect(conditionOf(await readCustom("runs", namespace, "planted"), "PolicyResolved")?.reason).toBe("WorkspaceInUse");
  });

  it("records the uid of the claim the operator made, which is the one its pods mount", async () => {
    const run = await waitForRunStatus("nested", (r) => typeof r.status?.["workspaceClaimUid"] === "string", "the claim's uid on record");
    const claim = await testCluster().core.readNamespacedPersistentVolumeClaim({ namespace, name: "nested-workspace" });
    expect(run.status?.["workspaceClaimUid"]).toBe(claim.metadata?.uid);
    expect(await mountedClaims("nested")).toEqual(["nested-workspace", "nested-workspace"]);
  });
});
