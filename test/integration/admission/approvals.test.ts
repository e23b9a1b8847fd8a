// Approvals as first-class objects, against the real API server: who approved is set at admission from the
// requesting user (never taken from the client), an answer cannot be changed, the controller binds each Approval
// to its Run's uid (label, owner reference), reports one that answers nothing, never binds one made before its Run,
// deletes consumed and orphaned ones after their TTL, and only the bound Run's sidecar may mark one consumed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APPROVAL_ANNOTATION, LABEL } from "../../../src/api/constants.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { conditionOf, createRun, readCustom, startTestOperator, type Custom, type TestOperator } from "../controller/operator-harness.ts";
import { installApprovalPolicies, whoAmI } from "./admission-harness.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1", plural: "approvals" };
const TTL_MS = 4000;
let namespace = "";
let op: TestOperator;
let policies: { remove(): Promise<void> } | undefined;
let me = "";

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("approvals");
  policies = await installApprovalPolicies();
  me = await whoAmI();
  // The mutating policy takes effect shortly after it is created: wait until a dry run comes back stamped.
  await waitFor(async () => {
    const r = await kubectl(["create", "--dry-run=server", "-o", "json", "-n", namespace, "-f", "-"], { input: JSON.stringify(approval("probe", "r", "x", { approvedBy: "mallory" })), allowFailure: true });
    return r.exitCode === 0 && (JSON.parse(r.stdout) as Custom).spec?.["approvedBy"] === me ? true : undefined;
  }, { timeoutMs: 30_000, description: "the approver policy to take effect" });
  op = await startTestOperator({}, { approvalTtlMs: TTL_MS });
});

afterAll(async () => {
  await op?.stop();
  await policies?.remove();
  if (namespace) await deleteNamespace(namespace);
});

function approval(name: string, run: string, id: string, extra: Record<string, unknown> = {}) {
  return { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name }, spec: { runRef: { name: run }, approvalId: id, decision: "allowOnce", ...extra } };
}

const createApproval = async (name: string, run: string, id: string, extra: Record<string, unknown> = {}) =>
  (await testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, body: approval(name, run, id, extra) })) as Custom;
const readApproval = async (name: string) => (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, name })) as Custom;
const isGone = (name: string) => readApproval(name).then(() => false, () => true);
const waitForApproval = (name: string, check: (a: Custom) => boolean, description: string) =>
  waitFor(async () => {
    const a = await readApproval(name);
    return check(a) ? a : undefined;
  }, { timeoutMs: 30_000, description });

describe("an Approval", () => {
  it("records who approved from the admission request, whatever the client wrote", async () => {
    const created = await createApproval("forged", "nobody", "x", { approvedBy: "mallory", reason: "looks fine" });
    expect(created.spec?.["approvedBy"]).toBe(me);
  });

  it("cannot have its answer changed", async () => {
    await createApproval("fixed", "nobody", "y");
    const result = await kubectl(["patch", "approval", "fixed", "-n", namespace, "--type=merge", "-p", JSON.stringify({ spec: { decision: "deny" } })], { allowFailure: true });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain("an Approval's answer cannot be changed; create a new Approval");
  });

  it("is bound to its Run's uid, and says whether the Run waits on its prompt", async () => {
    const run = await createRun(namespace, "r1", { agentRef: { name: "absent" } });
    await createApproval("for-r1", "r1", "p1", { reason: "ok" });
    const bound = await waitForApproval("for-r1", (a) => conditionOf(a, "Bound")?.status === "True" && conditionOf(a, "Matched") !== undefined, "the Approval to be bound");
    expect(bound.metadata?.labels?.[LABEL.runUid]).toBe(run.metadata?.uid);
    expect(bound.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", name: "r1", uid: run.metadata?.uid })]);
    expect(bound.metadata?.annotations?.[APPROVAL_ANNOTATION.sidecarServiceAccount]).toBe("r1-sidecar");
    expect(conditionOf(bound, "Matched")).toMatchObject({ status: "False", reason: "NoPendingPrompt", message: "Run 'r1' has no pending prompt 'p1' (answered, expired or never asked)" });

    // The sidecar reports the prompt as pending: the Approval now matches it.
    await kubectl(["patch", "run", "r1", "-n", namespace, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: { pendingApprovals: [{ id: "p1", kind: "tool_approval", tool: "shell" }] } })]);
    await waitForApproval("for-r1", (a) => conditionOf(a, "Matched")?.reason === "PendingPrompt", "the Approval to match the pending prompt");
  });

  it("that names no Run says so and is deleted after its TTL", async () => {
    await createApproval("ghost", "no-such-run", "p");
    const a = await waitForApproval("ghost", (x) => conditionOf(x, "Bound")?.status === "False", "the orphan to be reported");
    expect(conditionOf(a, "Bound")).toMatchObject({ reason: "RunNotFound", message: "Run 'no-such-run' does not exist; this Approval answers nothing" });
    await waitFor(async () => ((await isGone("ghost")) ? true : undefined), { timeoutMs: TTL_MS + 20_000, description: "the orphan deleted after its TTL" });
  });

  it("made before its Run existed is never bound to it (a stale answer cannot answer a re-created Run)", async () => {
    await createApproval("early", "later", "p");
    await waitForApproval("early", (x) => conditionOf(x, "Bound")?.reason === "RunNotFound", "the early Approval to be seen");
    // Timestamps have whole seconds: the Run must be created in a later second.
    await new Promise((r) => setTimeout(r, 1100));
    const run = await createRun(namespace, "later", { agentRef: { name: "absent" } });
    const a = await waitForApproval("early", (x) => conditionOf(x, "Bound")?.reason === "PredatesRun", "the early Approval refused");
    expect(conditionOf(a, "Bound")?.message).toBe(`created before Run 'later' (uid ${run.metadata?.uid}) existed; it never answers that Run's prompts`);
    expect(a.metadata?.labels?.[LABEL.runUid]).toBeUndefined();
  });

  it("once consumed is deleted after its TTL", async () => {
    await createRun(namespace, "r2", { agentRef: { name: "absent" } });
    await createApproval("used", "r2", "p2");
    await waitForApproval("used", (x) => conditionOf(x, "Bound")?.status === "True", "the Approval to be bound");
    await kubectl(["patch", "approval", "used", "-n", namespace, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: { consumed: true, consumedAt: new Date().toISOString(), message: "applied: allowOnce" } })]);
    await waitFor(async () => ((await isGone("used")) ? true : undefined), { timeoutMs: TTL_MS + 20_000, description: "the consumed Approval deleted after its TTL" });
    expect((await readCustom("runs", namespace, "r2")).metadata?.name).toBe("r2");
  });
});

describe("the status of an Approval", () => {
  beforeAll(async () => {
    // Two sidecar identities, each with what a per-Run Role grants on Approvals.
    for (const sa of ["r1-sidecar", "other-sidecar"]) {
      await kubectl(["create", "serviceaccount", sa, "-n", namespace]);
      await kubectl(["create", "role", `${sa}-approvals`, "-n", namespace, "--verb=get,list,watch,patch", "--resource=approvals.leviath.dev,approvals.leviath.dev/status"]);
      await kubectl(["create", "rolebinding", `${sa}-approvals`, "-n", namespace, `--role=${sa}-approvals`, `--serviceaccount=${namespace}:${sa}`]);
    }
  });

  const markAs = (sa: string) => kubectl(["patch", "approval", "for-r1", "-n", namespace, "--subresource=status", "--type=merge", "-o", "json", "-p", JSON.stringify({ status: { consumed: true, consumedAt: new Date().toISOString(), message: `by ${sa}` } }), "--as", `system:serviceaccount:${namespace}:${sa}`], { allowFailure: true });

  it("may be written by the sidecar of the Run it is bound to only", async () => {
    const refused = await markAs("other-sidecar");
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(`only the sidecar of the Run this Approval is bound to may write its status, not system:serviceaccount:${namespace}:other-sidecar`);
    expect((await readApproval("for-r1")).status?.["consumed"]).toBeUndefined();
    const allowed = await markAs("r1-sidecar");
    expect(allowed.exitCode, allowed.stderr).toBe(0);
    expect((JSON.parse(allowed.stdout) as Custom).status?.["message"]).toBe("by r1-sidecar");
  });
});
