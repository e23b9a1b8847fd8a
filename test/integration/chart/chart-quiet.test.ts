// A healthy Run reconciled by `leviath controller` with the chart's own RBAC (its ServiceAccount's token, as in
// chart-install.test.ts) counts no reconcile error and logs none: neither its start (a RoleBinding written before
// the Role it binds is refused while that Role does not exist, as the operator may not `bind` it) nor its first
// Approval (the approval reader's binding, likewise). None of the chart's alerts would fire on its metrics (promtool).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createRestrictedNamespace, deleteNamespace, helm, installCrds, kubectl, REPO_ROOT, testCluster, uniqueName, waitFor } from "../harness/index.ts";
import { buildTestApproval } from "../approval-cluster.ts";
import { childrenOf, createAgent, createRun, OURS } from "../controller/operator-harness.ts";
import { writeServiceAccountKubeconfig } from "../sidecar-fixtures.ts";
import { findFiringAlerts } from "./alerts-quiet.ts";
import { CHART, findManifest, parseManifests, type Manifest } from "./chart-harness.ts";

const APPROVALS = { group: "leviath.dev", version: "v1alpha1", plural: "approvals" } as const;
const RELEASE = uniqueName("quiet");
const FULLNAME = `${RELEASE}-leviath-operator`;
const SANDBOX = uniqueName("sandbox");
const agentSpec = (parse(readFileSync(join(REPO_ROOT, "examples/agent.yaml"), "utf8")) as { spec: Record<string, unknown> }).spec;
let release = "";
let controller: ChildProcess | undefined;
const logs: string[] = [];

beforeAll(async () => {
  await installCrds("charts/leviath-operator/crds/");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  release = await createRestrictedNamespace("quiet-operator");
  // Without the webhook: no node runs the controller's pods here (chart-install.test.ts says why).
  await helm(["install", RELEASE, CHART, "--namespace", release, "--set", `sandboxNamespace.name=${SANDBOX}`,
    "--set", "controller.runtimeImage=registry.example/runtime:1", "--set", "admission.webhook.enabled=false"], { timeoutMs: 120_000 });
}, 300_000);

afterAll(async () => {
  if (controller && controller.exitCode === null) controller.kill("SIGKILL");
  await helm(["uninstall", RELEASE, "--namespace", release], { allowFailure: true });
  for (const ns of [release, SANDBOX]) if (ns) await deleteNamespace(ns);
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
});

/** Starts the controller with the chart's arguments as the chart's ServiceAccount, its metrics on plain HTTP here; their address. */
async function startAsChart(): Promise<string> {
  const manifest = parseManifests((await helm(["get", "manifest", RELEASE, "--namespace", release])).stdout);
  const container = (findManifest(manifest, "Deployment") as Manifest & { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!;
  const args = container.args
    .filter((a) => a !== "--metrics-secure" && !a.startsWith("--metrics-cert-dir"))
    .map((a) => (a.startsWith("--metrics-bind-address") || a.startsWith("--health-probe-bind-address") ? `${a.split("=")[0]}=127.0.0.1:0` : a));
  const kubeconfig = await writeServiceAccountKubeconfig(join(mkdtempSync(join(tmpdir(), "leviath-sa-")), "kubeconfig"), release, FULLNAME);
  controller = spawn(process.execPath, [join(REPO_ROOT, "bin/leviath"), ...args, "--kubeconfig", kubeconfig], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, KUBECONFIG: "" } });
  controller.stderr!.setEncoding("utf8").on("data", (chunk: string) => logs.push(...chunk.split("\n").filter(Boolean)));
  return waitFor(() => {
    if (controller!.exitCode !== null) throw new Error(`controller exited ${controller!.exitCode}: ${logs.slice(-5).join("\n")}`);
    const started = logs.map((l) => JSON.parse(l) as { msg?: string; addresses?: { metrics: string } }).find((l) => l.msg === "controller started");
    return started?.addresses!.metrics;
  }, { timeoutMs: 60_000, description: "the controller to start" });
}

describe("a healthy Run under the chart's RBAC", { timeout: 300_000 }, () => {
  it("starts and gets its first Approval with no reconcile error counted or logged", async () => {
    // A healthy cluster: no Run or Approval left by an earlier file (its namespace still terminating), which this
    // controller would reconcile too and, outside the namespaces the chart lets it write, fail with forbidden.
    await waitFor(async () => {
      const left = await kubectl(["get", "runs,approvals", "--all-namespaces", "-o", "name"]);
      return left.stdout.trim() === "" ? true : undefined;
    }, { timeoutMs: 120_000, description: "no Run or Approval of another file left" });
    const metrics = await startAsChart();
    /** The sum of the samples whose line starts with `prefix` (NaN when there is none). */
    const sample = async (prefix: string) => {
      const lines = (await (await fetch(`http://${metrics}/metrics`)).text()).split("\n").filter((l) => l.startsWith(prefix));
      return lines.length === 0 ? Number.NaN : lines.reduce((n, l) => n + Number(l.split(" ").pop()), 0);
    };
    await waitFor(async () => (await sample("leader_election_master_status{")) === 1, { timeoutMs: 60_000, description: "the lease" });
    const scrape = async () => (await fetch(`http://${metrics}/metrics`)).text();
    const first = await scrape();

    await createAgent(SANDBOX, "notes-digest", agentSpec);
    await createRun(SANDBOX, "quiet", { agentRef: { name: "notes-digest" } });
    await waitFor(async () => {
      const refs = (await childrenOf(SANDBOX, "quiet")).map((c) => c.ref);
      return ["Pod/quiet-engine", "Role/quiet-sidecar", "RoleBinding/quiet-sidecar"].every((r) => refs.includes(r)) ? true : undefined;
    }, { timeoutMs: 60_000, description: "the Run's pod, Role and RoleBinding" });

    // The Approval kind is served a moment after its CRD is installed (503 until then), as the API server says.
    await waitFor(() => testCluster().custom.createNamespacedCustomObject({ ...APPROVALS, namespace: SANDBOX, body: buildTestApproval("quiet-first", "quiet", "gate-s1", "test") })
      .then(() => true, (err: unknown) => {
        if ((err as { code?: number }).code === 503) return false;
        throw err;
      }), { timeoutMs: 60_000, description: "the first Approval created" });
    await waitFor(async () => {
      const found = await kubectl(["get", "rolebinding", "quiet-approval-reader", "--namespace", SANDBOX, "-o", "name"], { allowFailure: true });
      return found.stdout.trim() !== "" ? true : undefined;
    }, { timeoutMs: 60_000, description: "the approval reader's binding" });

    // The records Role names the pinned Run's snapshot, written under the chart's RBAC.
    await waitFor(async () => {
      const role = await kubectl(["get", "role", "leviath-run-records", "--namespace", SANDBOX, "-o", "json"], { allowFailure: true });
      return role.exitCode === 0 && role.stdout.includes('"quiet-policy"') ? true : undefined;
    }, { timeoutMs: 60_000, description: "the leviath-run-records Role naming quiet-policy" });

    // The controllers reconciled the Run and the Approval (and wrote what each binding needs) without one error.
    expect(await sample('controller_runtime_reconcile_total{controller="run",')).toBeGreaterThan(0);
    expect(await sample('controller_runtime_reconcile_total{controller="records",')).toBeGreaterThan(0);
    expect(await sample('controller_runtime_reconcile_total{controller="approval",')).toBeGreaterThan(0);
    const errors = logs.filter((l) => (JSON.parse(l) as { level?: string }).level === "error");
    expect(await sample('controller_runtime_reconcile_errors_total{controller="run"}'), errors.join("\n")).toBe(0);
    expect(await sample('controller_runtime_reconcile_errors_total{controller="approval"}'), errors.join("\n")).toBe(0);
    expect(await sample('controller_runtime_reconcile_errors_total{controller="records"}'), errors.join("\n")).toBe(0);
    expect(errors).toEqual([]);
    // The chart's alerts, evaluated by promtool on this controller's two scrapes as Prometheus would label them,
    // as if it went on doing what it did meanwhile for 40 minutes: none fires.
    const target = { namespace: release, pod: `${FULLNAME}-0` };
    expect(await findFiringAlerts({ first, last: await scrape() }, target, { release: RELEASE, namespace: release })).toEqual([]);
  });
});
