// What the cluster-mode sidecar tests share: a run policy whose shell call is gated (taint after a read), and the
// stage's sandbox pod (it never runs here: there is no kubelet).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RunPolicySchema, type RunPolicy } from "../../src/api/run-policy.ts";
import { buildChildNames } from "../../src/sandbox/names.ts";
import { buildRole, buildRoleBinding, buildServiceAccount } from "../../src/sandbox/run-objects.ts";
import { computeSandboxPlan } from "../../src/sandbox/sandbox-plan.ts";
import { createSidecarClient, type SidecarClient } from "../../src/runtime/sidecar-client.ts";
import { makeTempDir, startSidecar, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { applyPolicy, createAgent, createRun, OURS, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type TestOperator } from "./controller/operator-harness.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "./harness/index.ts";

/** One container stage; shell allowed by permission, so the taint gate is what asks. */
export const SIDECAR_RUN_POLICY = RunPolicySchema.parse({
  agent: { key: "x/agent", name: "agent" },
  stages: [{ name: "main", sandbox: { kind: "container", image: "busybox:1", network: false, mounts: [], persist: false, onUnavailable: "error", source: "blueprint" } }],
  entryStage: "main",
  launch: { mode: "interactive", allow: [] },
  toolPermissions: { blueprint: {}, ceiling: { shell: "allow" }, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 10 },
});

/** A stage of kind `none` (no sandbox pod), unattended: submit_output allowed, send_email denied by the ceiling. */
export const RECORDS_RUN_POLICY = RunPolicySchema.parse({
  agent: { key: "x/agent", name: "agent" },
  stages: [{ name: "main", sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } }],
  entryStage: "main",
  launch: { mode: "unattended", allow: [] },
  toolPermissions: { blueprint: {}, ceiling: { submit_output: "allow", send_email: "deny" }, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 60, shellTimeoutSeconds: 10 },
});

/** Create the Run's sandbox pod as the plan names it; returns its name. */
export async function createSandboxPod(namespace: string, run: string): Promise<string> {
  const pod = computeSandboxPlan(run, SIDECAR_RUN_POLICY)[0]!.pod;
  await testCluster().core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: pod },
      spec: {
        securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } },
        containers: [{ name: "sandbox", image: "busybox:1", command: ["sleep", "infinity"], securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } }],
      },
    },
  });
  return pod;
}

/** The status of Approval `name` once its sidecar marked it consumed. */
export function waitForConsumed(namespace: string, name: string): Promise<{ consumed?: boolean; message?: string }> {
  return waitFor(async () => {
    const a = (await testCluster().custom.getNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "approvals", name })) as { status?: { consumed?: boolean; message?: string } };
    return a.status?.consumed ? a.status : undefined;
  }, { description: `Approval ${name} consumed` });
}

/** Every record of the run's `decisions.jsonl` files under `auditDir`. */
export function readDecisionRecords(auditDir: string): Record<string, unknown>[] {
  const files = (readdirSync(auditDir, { recursive: true }) as string[]).filter((f) => f.endsWith("decisions.jsonl"));
  return files.flatMap((f) => readFileSync(join(auditDir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>));
}

/**
 * Starts `leviath sidecar` in cluster mode for `run` under `root`: a workdir holding `notes.md`, the
 * {@link SIDECAR_RUN_POLICY} as its run policy, its audit in `<root>/audit`, talking to the API server as `kubeconfig`
 * (`env` is added to its environment).
 */
export async function startClusterSidecar(root: string, run: string, namespace: string, kubeconfig: string, extraArgs: readonly string[] = [], env: Record<string, string> = {}, policy: RunPolicy = SIDECAR_RUN_POLICY): Promise<{ sc: SidecarProcess; auditDir: string }> {
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(policy));
  const auditDir = join(root, "audit");
  const sc = await startSidecar(["--run-policy", join(root, "run-policy.json"), "--run", run, "--namespace", namespace, "--kubeconfig", kubeconfig, "--workdir", join(root, "work"), "--audit-dir", auditDir, ...extraArgs], { env });
  return { sc, auditDir };
}

/**
 * Creates Run `run` (agent `agent`) and its sidecar's identity exactly as the controller builds it (ServiceAccount,
 * Role with no exec targets, RoleBinding), and returns a kubeconfig that authenticates as that ServiceAccount
 * ({@link writeSidecarKubeconfig}).
 */
export async function createRunWithSidecarIdentity(namespace: string, run: string, root: string): Promise<string> {
  const { custom } = testCluster();
  const created = (await custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: run }, spec: { agentRef: { name: "agent" } } } })) as { metadata: { uid: string } };
  const ref = { name: run, namespace, uid: created.metadata.uid };
  const identity = [buildServiceAccount(ref, "agent"), buildRole(ref, "agent", []), buildRoleBinding(ref, "agent")];
  await kubectl(["apply", "-f", "-"], { input: identity.map((o) => JSON.stringify(o)).join("\n") });
  return writeSidecarKubeconfig(root, namespace, run);
}

/** A kubeconfig under `root` that authenticates as `run`'s sidecar ServiceAccount (a TokenRequest token), nothing else. */
export function writeSidecarKubeconfig(root: string, namespace: string, run: string): Promise<string> {
  return writeServiceAccountKubeconfig(join(root, `sidecar-${run}.kubeconfig`), namespace, buildChildNames(run).serviceAccount);
}

/** A kubeconfig `file` that authenticates as ServiceAccount `sa` (a TokenRequest token), its context's namespace `namespace`. */
export async function writeServiceAccountKubeconfig(file: string, namespace: string, sa: string): Promise<string> {
  const token = (await kubectl(["create", "token", sa, "-n", namespace, "--duration=1h"])).stdout.trim();
  const cluster = testCluster().kc.getCurrentCluster()!;
  const ca = cluster.caData ?? readFileSync(cluster.caFile!).toString("base64");
  writeFileSync(file, JSON.stringify({
    apiVersion: "v1", kind: "Config", "current-context": "sidecar",
    clusters: [{ name: "c", cluster: { server: cluster.server, "certificate-authority-data": ca } }],
    users: [{ name: "sidecar", user: { token } }],
    contexts: [{ name: "sidecar", context: { cluster: "c", user: "sidecar", namespace } }],
  }), { mode: 0o600 });
  return file;
}

/** Server-side applies `objs` as the operator's field manager (what the controller would write). */
export function applyAsOperator(objs: readonly unknown[]): ReturnType<typeof kubectl> {
  return kubectl(["apply", "--server-side", "--field-manager", "leviath-operator", "-f", "-"], { input: objs.map((o) => JSON.stringify(o)).join("\n") });
}

/**
 * A real sidecar for Run `run` as the kubelet would start it: the run policy the controller pinned (`<run>-policy`)
 * written where `--run-policy` reads it, the Run's namespace and the test cluster's kubeconfig, the workdir
 * `<root>/work` and the audit under `<root>/audit` (`extra`: more flags).
 */
export async function startPinnedRunSidecar(at: { namespace: string; run: string; root: string }, extra: string[] = []): Promise<{ sc: SidecarProcess; auditDir: string }> {
  const { namespace, run, root } = at;
  const pinned = await testCluster().core.readNamespacedConfigMap({ name: buildChildNames(run).configMap, namespace });
  writeFileSync(join(root, "run-policy.json"), pinned.data!["run-policy.json"]!);
  const auditDir = join(root, "audit");
  const sc = await startSidecar(["--run-policy", join(root, "run-policy.json"), "--run", run, "--namespace", namespace, "--kubeconfig", testCluster().kubeconfigPath, "--workdir", join(root, "work"), "--audit-dir", auditDir, ...extra]);
  return { sc, auditDir };
}

/** What {@link startOperatorWithPinnedRun} sets up, and its teardown. */
export interface PinnedRunFixture {
  readonly namespace: string;
  readonly root: string;
  readonly auditDir: string;
  readonly sc: SidecarProcess;
  readonly op: TestOperator;
  readonly client: SidecarClient;
  /** Stops the sidecar (asserting it exits 0) and the operator, deletes the policy and the namespace. */
  stop(): Promise<void>;
}

/**
 * The setup of the "a pinned Run's real sidecar" tests: the CRDs, a restricted namespace, the cluster LeviathPolicy
 * applied afresh, the operator, an Agent `reader` (no sandbox, one stage `main`, plus `agent`), Run `run` pinned by
 * the operator, and a real sidecar for it on `<root>/work` (holding `notes.md`) with a client. `prepare` writes more
 * files under the root before the Agent is created (it returns the Agent's extra fields).
 */
export async function startOperatorWithPinnedRun(at: { prefix: string; run: string; policy: Record<string, unknown>; sidecarArgs?: string[]; prepare?: (root: string) => Record<string, unknown> }): Promise<PinnedRunFixture> {
  await installCrds("crds/");
  const namespace = await createRestrictedNamespace(at.prefix);
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  const root = makeTempDir(`leviath-${at.prefix}-`);
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  const agent = at.prepare?.(root) ?? {};
  await applyPolicy(at.policy);
  const op = await startTestOperator();
  await createAgent(namespace, "reader", { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "none" }, stages: [{ name: "main" }], ...agent });
  await createRun(namespace, at.run, { agentRef: { name: "reader" } });
  // What the kubelet would mount: the run policy the controller pinned.
  await waitForCustom("runs", namespace, at.run, (r) => r.status?.agent !== undefined, "the Run pinned");
  const { sc, auditDir } = await startPinnedRunSidecar({ namespace, run: at.run, root }, at.sidecarArgs);
  const client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 30_000 });
  return {
    namespace, root, auditDir, sc, op, client,
    async stop() {
      const code = await sc.stop();
      await op.stop();
      await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
      await deleteNamespace(namespace);
      if (code !== 0) throw new Error(`the sidecar exited ${code}`);
    },
  };
}
