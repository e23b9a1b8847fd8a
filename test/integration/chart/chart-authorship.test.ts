// Authorship (issue 41; docs/security.md, "Authorship"): the controller and the sidecars find their children by name,
// label and owner reference, which anyone who may write that kind can set. With the chart installed by the real helm,
// against the real API server (and the real kube-controller-manager), a namespace editor (the chart's edit role plus
// Kubernetes' own `edit`, which may create pods, ServiceAccounts and ConfigMaps) plants a Run's sandbox pod, its
// sidecar's ServiceAccount and its `<run>-policy` with the operator's marks, and is refused by `<release>-authorship`,
// which names the marks; another Run's sidecar may not write the victim's audit. The operator's ServiceAccount makes
// the same objects, the Run's own sidecar writes its audit and result through the sidecar's own code, and the garbage
// collector still orphans a marked child; the controller's start check reads the policy as the chart's ServiceAccount.
// The rendered policy holds the lists of src/sandbox/authorship-marks.ts. On main (07ff6e1) every planted object was
// admitted.
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { API_VERSION } from "../../../src/api/constants.ts";
import { createKubeClient, loadKubeConfig } from "../../../src/kube/client.ts";
import { checkAuthorshipPolicy } from "../../../src/controller/authorship-policy.ts";
import { createClusterRecords } from "../../../src/sidecar/cluster/cluster-records.ts";
import { buildAuthorshipPolicyName, formatCelList, MARKED_RESOURCES, SIDECAR_MARKS, TRUSTED_ANNOTATIONS, TRUSTED_LABELS, TRUSTED_MANAGERS, TRUSTED_OWNER_GROUP } from "../../../src/sandbox/authorship-marks.ts";
import { buildAuditChunkName, buildChildMeta, buildChildNames, buildOwnerReference, buildSandboxPodName, type RunRef } from "../../../src/sandbox/names.ts";
import { buildRole, buildRoleBinding, buildServiceAccount } from "../../../src/sandbox/run-objects.ts";
import { makeTempDir } from "../../cli/sidecar-harness.ts";
import { writeServiceAccountKubeconfig, writeSidecarKubeconfig } from "../sidecar-fixtures.ts";
import { helm, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { allows, CHART, findManifest, parseManifests, renderChart, rulesOf, useTestRelease, type Manifest } from "./chart-harness.ts";

const fixture = useTestRelease("authorship");
const SANDBOX = fixture.sandbox;
const POLICY = `${fixture.fullname}-authorship`;
const EDITOR = "mallory";
let operator = "";
let victim: RunRef;
let other: RunRef;

/** `kubectl create -f -` of `obj` as `user`: the result whatever its exit status. */
const createAs = (user: string, obj: unknown) => kubectl(["create", "-f", "-", "--as", user], { input: JSON.stringify(obj), allowFailure: true });

/** Expects `r` refused by the authorship policy, for `user` creating or changing `what`, naming each of `marks`. */
function expectRefused(r: { exitCode: number | null; stderr: string }, user: string, verb: string, what: string, marks: string[]): void {
  expect(r.exitCode).not.toBe(0);
  expect(r.stderr).toContain(`ValidatingAdmissionPolicy '${POLICY}'`);
  expect(r.stderr).toContain(`${user} may not ${verb} ${what}: it carries marks by which the Leviath operator recognises its own objects`);
  for (const mark of marks) expect(r.stderr).toContain(mark);
  expect(r.stderr).toContain(`only the operator (${operator}) may set, change or remove them`);
}

async function createRun(name: string): Promise<RunRef> {
  const created = (await testCluster().custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace: SANDBOX, plural: "runs", body: { apiVersion: API_VERSION, kind: "Run", metadata: { name }, spec: { agentRef: { name: "agent" } } } })) as { metadata: { uid: string } };
  return { name, namespace: SANDBOX, uid: created.metadata.uid };
}

/** A pod the restricted Pod Security profile admits, so only the authorship policy can refuse it. */
const restrictedPod = (metadata: object) => ({
  apiVersion: "v1", kind: "Pod", metadata,
  spec: {
    securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } },
    containers: [{ name: "sleep", image: "busybox", command: ["sleep", "3600"], securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } }],
  },
});

beforeAll(async () => {
  const ns = fixture.namespace();
  operator = `system:serviceaccount:${ns}:${fixture.fullname}`;
  // No controller replica answers here (no node), so the webhook is off: Runs are created as an admin would.
  const installed = await helm(["install", fixture.name, CHART, "--namespace", ns, "--set", `sandboxNamespace.name=${SANDBOX}`, "--set", "admission.webhook.enabled=false"], { allowFailure: true, timeoutMs: 120_000 });
  expect(installed.exitCode, installed.stderr).toBe(0);
  for (const role of [`${fixture.fullname}-edit`, "edit"]) await kubectl(["create", "rolebinding", `${EDITOR}-${role}`.slice(0, 63), "-n", SANDBOX, `--clusterrole=${role}`, `--user=${EDITOR}`]);
  victim = await createRun("victim");
  other = await createRun("other");
  // The policy takes effect a moment after it is created: until a marked ConfigMap of the editor's is refused, it has not.
  await waitFor(async () => {
    const probe = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "probe", namespace: SANDBOX, labels: { "leviath.dev/run": "probe" } } };
    const r = await kubectl(["create", "--dry-run=server", "-f", "-", "--as", EDITOR], { input: JSON.stringify(probe), allowFailure: true });
    return r.exitCode !== 0 && r.stderr.includes(POLICY) ? r : undefined;
  }, { timeoutMs: 30_000, description: "the authorship policy to take effect" });
}, 300_000);

describe("the authorship admission policy as rendered", () => {
  type Policy = Manifest & { spec: { failurePolicy: string; matchConstraints: { resourceRules: { apiGroups: string[]; operations: string[]; resources: string[] }[] }; variables: { name: string; expression: string }[] } };
  type Binding = Manifest & { spec: { policyName: string; validationActions: string[]; matchResources?: { namespaceSelector: { matchExpressions: { key: string; operator: string; values: string[] }[] } } } };
  const NAME = buildAuthorshipPolicyName("leviath-operator");

  it("holds the marks and guards the kinds src/sandbox/authorship-marks.ts lists, for the operator's ServiceAccount, failing closed", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", "leviath-system"));
    const policy = findManifest(ms, "ValidatingAdmissionPolicy", NAME) as Policy;
    const variable = (name: string) => policy.spec.variables.find((v) => v.name === name)?.expression;
    expect(policy.spec.failurePolicy).toBe("Fail");
    expect([variable("trustedLabels"), variable("trustedManagers"), variable("trustedAnnotations"), variable("trustedOwnerGroup")])
      .toEqual([formatCelList(TRUSTED_LABELS), formatCelList(TRUSTED_MANAGERS), formatCelList(TRUSTED_ANNOTATIONS), `'${TRUSTED_OWNER_GROUP}'`]);
    expect(variable("operator")).toBe(`variables.user == 'system:serviceaccount:leviath-system:leviath-operator'`);
    for (const shape of ["sidecarShaped", "oldSidecarShaped"]) {
      for (const part of [formatCelList(SIDECAR_MARKS.labels), formatCelList(SIDECAR_MARKS.components), `'${SIDECAR_MARKS.manager}'`]) expect(variable(shape)).toContain(part);
    }
    const rules = policy.spec.matchConstraints.resourceRules;
    expect(rules.map((r) => ({ group: r.apiGroups.join(), resources: r.resources }))).toEqual(MARKED_RESOURCES);
    expect(rules.every((r) => r.operations.join() === "CREATE,UPDATE")).toBe(true);
    // The controller reads it at start, by name, and nothing else of the cluster's admission policies.
    expect((findManifest(ms, "Deployment") as Manifest & { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args).toContain(`--authorship-policy=${NAME}`);
    const read = rulesOf(findManifest(ms, "ClusterRole", "leviath-operator-read"));
    expect(allows(read, "admissionregistration.k8s.io", "validatingadmissionpolicies", "get", NAME)).toBe(true);
    expect(allows(read, "admissionregistration.k8s.io", "validatingadmissionpolicybindings", "get", NAME)).toBe(true);
    expect(allows(read, "admissionregistration.k8s.io", "validatingadmissionpolicies", "get", "leviath-operator-resume")).toBe(false);
  });

  it("is bound with Deny in the namespaces the operator writes in, or in every namespace with rbac.scope=cluster", async () => {
    const binding = async (args: string[]) => findManifest(parseManifests(await renderChart("leviath-operator", "leviath-system", args)), "ValidatingAdmissionPolicyBinding", NAME) as Binding;
    const namespaced = await binding(["--set", "rbac.namespaces={team-a,leviath-sandbox}"]);
    expect([namespaced.spec.policyName, namespaced.spec.validationActions]).toEqual([NAME, ["Deny"]]);
    expect(namespaced.spec.matchResources?.namespaceSelector.matchExpressions).toEqual([{ key: "kubernetes.io/metadata.name", operator: "In", values: ["leviath-sandbox", "team-a"] }]);
    const cluster = await binding(["--set", "rbac.scope=cluster"]);
    expect(cluster.spec.matchResources).toBeUndefined();
  });
});

describe("a namespace editor, against the chart's authorship policy", () => {
  it("may not plant a Run's sandbox pod with the operator's label and an owner reference naming the Run", async () => {
    const meta = buildChildMeta(victim, "agent", { name: buildSandboxPodName(victim.name, "0123456789"), component: "sandbox" });
    const r = await createAs(EDITOR, restrictedPod(meta));
    expectRefused(r, EDITOR, "create", `Pod ${SANDBOX}/${meta.name}`, [
      "label app.kubernetes.io/managed-by=leviath-operator", "label leviath.dev/run=victim", `owner Run/victim uid ${victim.uid} (controller)`,
    ]);
  });

  it("may not plant a pod that carries only the owner reference", async () => {
    const r = await createAs(EDITOR, restrictedPod({ name: "victim-engine", namespace: SANDBOX, ownerReferences: [buildOwnerReference(victim)] }));
    expectRefused(r, EDITOR, "create", `Pod ${SANDBOX}/victim-engine`, [`owner Run/victim uid ${victim.uid} (controller)`]);
  });

  it("may not plant the Run's sidecar ServiceAccount or its <run>-policy ConfigMap", async () => {
    const sa = await createAs(EDITOR, buildServiceAccount(victim, "agent"));
    expectRefused(sa, EDITOR, "create", `ServiceAccount ${SANDBOX}/victim-sidecar`, ["label leviath.dev/component=sidecar-identity"]);
    const policy = { apiVersion: "v1", kind: "ConfigMap", metadata: buildChildMeta(victim, "agent", { name: buildChildNames(victim.name).configMap, component: "run-policy" }), data: { "policy.json": "{}" } };
    const cm = await createAs(EDITOR, policy);
    expectRefused(cm, EDITOR, "create", `ConfigMap ${SANDBOX}/victim-policy`, ["label leviath.dev/component=run-policy"]);
  });

  it("may not mark an Approval as bound to a Run", async () => {
    const approval = { apiVersion: API_VERSION, kind: "Approval", metadata: { name: "pre-bound", namespace: SANDBOX, labels: { "leviath.dev/run-uid": victim.uid } }, spec: { runRef: { name: "victim" }, approvalId: "a1", decision: "allowOnce", reason: "pre-bound" } };
    // As an admin: the approver's own rights are not the point, the mark is.
    const r = await kubectl(["create", "-f", "-"], { input: JSON.stringify(approval), allowFailure: true });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(`ValidatingAdmissionPolicy '${POLICY}'`);
    expect(r.stderr).toContain(`label leviath.dev/run-uid=${victim.uid}`);
  });

  it("still writes what carries no mark, an owner's opt-in label included", async () => {
    const notes = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "team-notes", namespace: SANDBOX, labels: { "leviath.dev/blueprint-files": "true", "app.kubernetes.io/managed-by": "Helm" } }, data: { a: "b" } };
    const r = await createAs(EDITOR, notes);
    expect(r.exitCode, r.stderr).toBe(0);
  });
});

describe("the operator and the sidecars, under the same policy", () => {
  it("let the operator's ServiceAccount make the Run's sidecar identity and policy, which the editor may then neither change nor unmark", async () => {
    const identity = [buildServiceAccount(victim, "agent"), buildRole(victim, "agent", []), buildRoleBinding(victim, "agent"), buildServiceAccount(other, "agent"), buildRole(other, "agent", []), buildRoleBinding(other, "agent")];
    const made = await kubectl(["create", "-f", "-", "--as", operator], { input: identity.map((o) => JSON.stringify(o)).join("\n"), allowFailure: true });
    expect(made.exitCode, made.stderr).toBe(0);
    const policy = { apiVersion: "v1", kind: "ConfigMap", metadata: buildChildMeta(victim, "agent", { name: buildChildNames(victim.name).configMap, component: "run-policy" }), data: { "policy.json": "{}" } };
    const cm = await createAs(operator, policy);
    expect(cm.exitCode, cm.stderr).toBe(0);
    const unmark = await kubectl(["label", "configmap", "victim-policy", "-n", SANDBOX, "app.kubernetes.io/managed-by-", "--as", EDITOR], { allowFailure: true });
    expectRefused(unmark, EDITOR, "change", `ConfigMap ${SANDBOX}/victim-policy`, ["label app.kubernetes.io/managed-by=leviath-operator"]);
    const edit = await kubectl(["patch", "configmap", "victim-policy", "-n", SANDBOX, "--type=merge", "-p", JSON.stringify({ data: { "policy.json": "{\"wider\":true}" } }), "--as", EDITOR], { allowFailure: true });
    expectRefused(edit, EDITOR, "change", `ConfigMap ${SANDBOX}/victim-policy`, ["label leviath.dev/component=run-policy"]);
  });

  it("let a Run's sidecar write its audit and result with the sidecar's own code, and refuse another Run's sidecar the victim's audit", async () => {
    const root = makeTempDir("leviath-authorship-");
    const client = createKubeClient(loadKubeConfig(await writeSidecarKubeconfig(root, SANDBOX, victim.name)));
    const records = createClusterRecords({ client, namespace: SANDBOX, run: victim.name });
    await records.writeAuditChunk(0, "{\"line\":1}\n");
    await records.writeAuditChunk(0, "{\"line\":1}\n{\"line\":2}\n");
    await records.writeResult("the output");
    const chunk = JSON.parse((await kubectl(["get", "configmap", buildAuditChunkName(victim.name, 0), "-n", SANDBOX, "-o", "json"])).stdout) as { metadata: { labels: Record<string, string> } };
    expect(chunk.metadata.labels["app.kubernetes.io/managed-by"]).toBe("leviath-sidecar");

    const attacker = `system:serviceaccount:${SANDBOX}:${buildChildNames(other.name).serviceAccount}`;
    const forged = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: buildAuditChunkName(victim.name, 31), namespace: SANDBOX, labels: { "leviath.dev/run": "victim", "leviath.dev/component": "audit", "app.kubernetes.io/managed-by": "leviath-sidecar" }, ownerReferences: [{ ...buildOwnerReference(victim), controller: false, blockOwnerDeletion: false }] }, data: { "audit.jsonl": "{}\n" } };
    expectRefused(await createAs(attacker, forged), attacker, "create", `ConfigMap ${SANDBOX}/victim-audit-031`, ["label app.kubernetes.io/managed-by=leviath-sidecar", `owner Run/victim uid ${victim.uid}`]);
    // Its own name, but the operator's marks: a sidecar marks only as a sidecar.
    const asOperator = { ...forged, metadata: { ...forged.metadata, name: buildAuditChunkName(other.name, 0), labels: { ...forged.metadata.labels, "app.kubernetes.io/managed-by": "leviath-operator" } } };
    expectRefused(await createAs(attacker, asOperator), attacker, "create", `ConfigMap ${SANDBOX}/other-audit-000`, ["label app.kubernetes.io/managed-by=leviath-operator"]);
  });

  it("let the garbage collector orphan a marked child when its Run is deleted with orphan propagation, and mark nothing", async () => {
    const run = await createRun("orphaning");
    const child = { apiVersion: "v1", kind: "ConfigMap", metadata: buildChildMeta(run, "agent", { name: buildChildNames(run.name).configMap, component: "run-policy" }), data: {} };
    const made = await createAs(operator, child);
    expect(made.exitCode, made.stderr).toBe(0);
    await testCluster().custom.deleteNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace: SANDBOX, plural: "runs", name: run.name, propagationPolicy: "Orphan" });
    const owners = await waitFor(async () => {
      const cm = JSON.parse((await kubectl(["get", "configmap", child.metadata.name, "-n", SANDBOX, "-o", "json"])).stdout) as { metadata: { ownerReferences?: unknown[] } };
      return (cm.metadata.ownerReferences ?? []).length === 0 ? "none" : undefined;
    }, { timeoutMs: 60_000, description: "the garbage collector to orphan the Run's ConfigMap" });
    expect(owners).toBe("none");
    // The garbage collector's identity removes marks, and adds none.
    const gc = "system:serviceaccount:kube-system:generic-garbage-collector";
    const mark = await kubectl(["label", "configmap", "team-notes", "-n", SANDBOX, "leviath.dev/run=orphaning", "--as", gc], { allowFailure: true });
    expectRefused(mark, gc, "change", `ConfigMap ${SANDBOX}/team-notes`, ["label leviath.dev/run=orphaning"]);
  });
});

describe("the controller's check at start, as the chart's ServiceAccount", () => {
  it("finds the policy in force, and not once its binding is gone, saying which is missing", async () => {
    const ns = fixture.namespace();
    const kubeconfig = await writeServiceAccountKubeconfig(join(makeTempDir("leviath-authorship-sa-"), "operator.kubeconfig"), ns, fixture.fullname);
    const client = createKubeClient(loadKubeConfig(kubeconfig));
    expect(await checkAuthorshipPolicy(client, POLICY)).toEqual({ inForce: true, message: `the authorship admission policy ${POLICY} is in force: only the operator sets the marks it recognises its objects by` });
    await kubectl(["delete", "validatingadmissionpolicybinding", POLICY]);
    const gone = await checkAuthorshipPolicy(client, POLICY);
    expect(gone.inForce).toBe(false);
    expect(gone.message).toContain(`the authorship admission policy ${POLICY} is not in force (no ValidatingAdmissionPolicyBinding of that name)`);
  });
});
