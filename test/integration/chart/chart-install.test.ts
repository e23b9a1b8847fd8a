// A real `helm install` (namespaced RBAC), then `leviath controller` run with the chart's own arguments as the
// chart's ServiceAccount (a token from the TokenRequest API): the least-privilege RBAC is enough to reconcile
// Agents and Runs where the operator may work, and refuses it everywhere else. Its metrics are scraped as a real
// Prometheus would with the chart's defaults: HTTPS verified against the chart's certificate, with the token of a
// ServiceAccount bound to <fullname>-metrics-reader; anyone else is refused.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { digestMetricsToken } from "../../../src/sidecar/http/metrics-token.ts";
import {
  applyObjects, createRestrictedNamespace, deleteNamespace, helm, installCrds, kubectl, REPO_ROOT, scrapeHttps, serviceAccountToken, testCluster, uniqueName, waitFor,
} from "../harness/index.ts";
import { childrenOf, createAgent, createRun, OURS, readCustom } from "../controller/operator-harness.ts";
import { CHART, findManifest, parseManifests, type Manifest } from "./chart-harness.ts";

const RELEASE = uniqueName("lev");
const FULLNAME = `${RELEASE}-leviath-operator`;
const SANDBOX = uniqueName("sandbox");
const agentSpec = (parse(readFileSync(join(REPO_ROOT, "examples/agent.yaml"), "utf8")) as { spec: Record<string, unknown> }).spec;
let release = "";
let team = "";
let outside = "";
let controller: ChildProcess | undefined;
const logs: string[] = [];

beforeAll(async () => {
  await installCrds("charts/leviath-operator/crds/");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  release = await createRestrictedNamespace("operator");
  team = await createRestrictedNamespace("team");
  outside = await createRestrictedNamespace("outside");
  // Without the webhook (on by default): no node runs the controller's pods here, so the API server could not reach
  // it through its Service, and it fails closed for the Agents and Runs this file creates. The webhook is tested in
  // test/integration/admission/webhook.test.ts and, installed by default, on the real node (test/e2e/).
  await helm(["install", RELEASE, CHART, "--namespace", release, "--set", `sandboxNamespace.name=${SANDBOX}`,
    "--set", `rbac.namespaces={${team}}`, "--set", "controller.runtimeImage=registry.example/runtime:1", "--set", "admission.webhook.enabled=false"], { timeoutMs: 120_000 });
  // What an installer does for Prometheus (docs/metrics.md): bind the chart's reader role to the scraper.
  await applyObjects([
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "prometheus", namespace: release } },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: `${RELEASE}-prometheus` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${FULLNAME}-metrics-reader` }, subjects: [{ kind: "ServiceAccount", name: "prometheus", namespace: release }] } as never,
  ]);
}, 300_000);

afterAll(async () => {
  if (controller && controller.exitCode === null) controller.kill("SIGKILL");
  await helm(["uninstall", RELEASE, "--namespace", release], { allowFailure: true });
  await testCluster().objects.delete({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: `${RELEASE}-prometheus` } }).catch(() => undefined);
  for (const ns of [release, team, outside, SANDBOX]) if (ns) await deleteNamespace(ns);
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
});

const sa = () => `system:serviceaccount:${release}:${FULLNAME}`;
const canI = async (args: string[]) => (await kubectl(["auth", "can-i", ...args, "--as", sa()], { allowFailure: true })).stdout.trim();

describe("helm install", () => {
  it("installs the operator: its pods pass Pod Security restricted, the sandbox namespace enforces it, the policy exists", async () => {
    const { core, custom } = testCluster();
    // The ReplicaSet controller creates the pods only if the restricted namespace admits them (no node runs them).
    const pods = await waitFor(async () => {
      const list = await core.listNamespacedPod({ namespace: release, labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
      return list.items.length === 2 ? list.items : undefined;
    }, { timeoutMs: 60_000, description: "the controller's two pods" });
    expect(pods.map((p) => p.spec?.containers[0]?.args?.[0])).toEqual(["controller", "controller"]);
    const ns = await core.readNamespace({ name: SANDBOX });
    expect(ns.metadata?.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    const policy = (await custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { spec: { security: { taintTracking: boolean } } };
    expect(policy.spec.security.taintTracking).toBe(true);
  });

  it("grants the ServiceAccount writes only in its namespaces, reads cluster-wide, and of secrets only get where it writes", async () => {
    for (const ns of [SANDBOX, team]) {
      expect(await canI(["create", "pods", "-n", ns]), ns).toBe("yes");
      expect(await canI(["patch", "runs.leviath.dev", "--subresource=status", "-n", ns]), ns).toBe("yes");
      expect(await canI(["create", "roles", "-n", ns]), ns).toBe("yes");
    }
    expect(await canI(["create", "pods", "-n", outside])).toBe("no");
    expect(await canI(["create", "pods/exec", "-n", outside])).toBe("no");
    expect(await canI(["patch", "agents.leviath.dev", "--subresource=status", "-n", outside])).toBe("no");
    expect(await canI(["list", "pods", "--all-namespaces"])).toBe("yes");
    // Credential Secrets are checked by a metadata-only get; never listed, watched or read elsewhere.
    expect(await canI(["get", "secrets", "-n", SANDBOX])).toBe("yes");
    expect(await canI(["list", "secrets", "-n", SANDBOX])).toBe("no");
    expect(await canI(["watch", "secrets", "-n", SANDBOX])).toBe("no");
    expect(await canI(["get", "secrets", "-n", outside])).toBe("no");
    expect(await canI(["delete", "leviathpolicies.leviath.dev/cluster"])).toBe("no");
    expect(await canI(["update", "leases/leviath-operator", "-n", release])).toBe("yes");
    expect(await canI(["update", "leases/other", "-n", release])).toBe("no");
    // The sidecars' scrape token: that one Secret of its own namespace, and the reviews of secure metrics.
    expect(await canI(["get", `secrets/${FULLNAME}-sidecar-metrics`, "-n", release])).toBe("yes");
    expect(await canI(["get", "secrets/other", "-n", release])).toBe("no");
    expect(await canI(["list", "secrets", "-n", release])).toBe("no");
    expect(await canI(["create", "tokenreviews.authentication.k8s.io"])).toBe("yes");
    expect(await canI(["create", "subjectaccessreviews.authorization.k8s.io"])).toBe("yes");
  });

  it("is enough for `leviath controller` with the chart's arguments to reconcile there, and nowhere else", async () => {
    const manifest = parseManifests((await helm(["get", "manifest", RELEASE, "--namespace", release])).stdout);
    const container = (findManifest(manifest, "Deployment") as Manifest & { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!;
    // The chart's certificate, where the pod would mount it.
    const tls = await testCluster().core.readNamespacedSecret({ name: `${FULLNAME}-metrics-tls`, namespace: release });
    const certDir = mkdtempSync(join(tmpdir(), "leviath-metrics-tls-"));
    for (const key of ["tls.crt", "tls.key"]) writeFileSync(join(certDir, key), Buffer.from(tls.data![key]!, "base64"), { mode: 0o600 });
    const ca = Buffer.from(tls.data!["tls.crt"]!, "base64");
    const args = container.args.map((a) => (a.startsWith("--metrics-bind-address") || a.startsWith("--health-probe-bind-address") ? `${a.split("=")[0]}=127.0.0.1:0`
      : a.startsWith("--metrics-cert-dir=") ? `--metrics-cert-dir=${certDir}` : a));
    expect(args).toContain("--leader-elect");
    expect(args).toContain("--metrics-secure");
    expect(args).toContain(`--sidecar-metrics-token-secret=${FULLNAME}-sidecar-metrics`);

    const token = (await kubectl(["create", "token", FULLNAME, "--namespace", release, "--duration=1h"])).stdout.trim();
    const cluster = testCluster().kc.getCurrentCluster()!;
    const kubeconfig = join(mkdtempSync(join(tmpdir(), "leviath-sa-")), "kubeconfig");
    writeFileSync(kubeconfig, JSON.stringify({
      apiVersion: "v1", kind: "Config", "current-context": "sa",
      clusters: [{ name: "c", cluster: { server: cluster.server, "certificate-authority-data": cluster.caData } }],
      users: [{ name: "sa", user: { token } }],
      contexts: [{ name: "sa", context: { cluster: "c", user: "sa", namespace: release } }],
    }), { mode: 0o600 });
    controller = spawn(process.execPath, [join(REPO_ROOT, "bin/leviath"), ...args, "--kubeconfig", kubeconfig], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, KUBECONFIG: "" } });
    controller.stderr!.setEncoding("utf8").on("data", (chunk: string) => logs.push(...chunk.split("\n").filter(Boolean)));
    const metrics = await waitFor(() => {
      if (controller!.exitCode !== null) throw new Error(`controller exited ${controller!.exitCode}: ${logs.slice(-5).join("\n")}`);
      const started = logs.map((l) => JSON.parse(l) as { msg?: string; addresses?: { metrics: string } }).find((l) => l.msg === "controller started");
      return started?.addresses!.metrics;
    }, { timeoutMs: 60_000, description: "the controller to start" });
    const scraper = { address: metrics, ca, servername: `${FULLNAME}-metrics.${release}.svc` };
    const prometheus = await serviceAccountToken(release, "prometheus");
    const sample = async (line: string) => {
      const r = await scrapeHttps({ ...scraper, bearer: prometheus });
      expect(r.status).toBe(200);
      return Number(r.body.split("\n").find((l) => l.startsWith(line))?.split(" ").pop() ?? "NaN");
    };
    await waitFor(async () => (await sample("leader_election_master_status{")) === 1, { timeoutMs: 60_000, description: "the lease" });

    for (const ns of [SANDBOX, team, outside]) await createAgent(ns, "notes-digest", agentSpec);
    await createRun(SANDBOX, "digest", { agentRef: { name: "notes-digest" } });
    await createRun(outside, "digest", { agentRef: { name: "notes-digest" } });

    // Engine pod, sandbox pod, policy ConfigMap, workspace claim, NetworkPolicy, sidecar ServiceAccount/Role/RoleBinding.
    const children = await waitFor(async () => {
      const c = await childrenOf(SANDBOX, "digest");
      return c.length >= 8 ? c.map((x) => x.ref) : undefined;
    }, { timeoutMs: 60_000, description: "the Run's children in the sandbox namespace" }).catch((error: unknown) => {
      throw new Error(`${String(error)}\ncontroller log:\n${logs.filter((l) => l.includes(SANDBOX)).slice(-6).join("\n")}`);
    });
    // The engine pod's sidecar serves /metrics only to the scrape token the controller created; the pod holds its digest.
    const scrapeToken = await testCluster().core.readNamespacedSecret({ name: `${FULLNAME}-sidecar-metrics`, namespace: release });
    const engine = await testCluster().core.readNamespacedPod({ name: "digest-engine", namespace: SANDBOX });
    const sidecarArgs = engine.spec?.initContainers?.[0]?.args ?? [];
    expect(sidecarArgs[sidecarArgs.indexOf("--metrics-token-sha256") + 1]).toBe(digestMetricsToken(Buffer.from(scrapeToken.data!["token"]!, "base64").toString("utf8")));
    expect(JSON.stringify(engine.spec)).not.toContain(scrapeToken.data!["token"]!);
    expect(children).toEqual(expect.arrayContaining(["Pod/digest-engine", "NetworkPolicy/digest-isolate", "Role/digest-sidecar", "RoleBinding/digest-sidecar", "ConfigMap/digest-policy", "PersistentVolumeClaim/digest-workspace"]));
    const run = await waitFor(async () => {
      const r = await readCustom("runs", SANDBOX, "digest");
      return r.status?.["phase"] ? r : undefined;
    }, { description: "the Run's phase" });
    expect(run.status?.["phase"]).toBe("Pending");
    const teamAgent = await waitFor(async () => (await readCustom("agents", team, "notes-digest")).status, { description: "the Agent's status in the extra namespace" });
    expect(teamAgent["valid"]).toBe(true);

    // Outside its namespaces the operator may write nothing: it says so with forbidden errors and leaves no trace.
    await waitFor(async () => (await sample('leviath_reconcile_errors_total{controller="agent",error_kind="forbidden"}')) > 0, { timeoutMs: 60_000, description: "forbidden agent reconciles" });
    await waitFor(async () => (await sample('leviath_reconcile_errors_total{controller="run",error_kind="forbidden"}')) > 0, { timeoutMs: 60_000, description: "forbidden run reconciles" });
    expect(await childrenOf(outside, "digest")).toEqual([]);
    expect((await readCustom("agents", outside, "notes-digest")).status).toBeUndefined();

    // With the chart's defaults nobody else reads the metrics: no token, the controller's own (not a reader), a
    // forged one, plain HTTP.
    expect((await scrapeHttps(scraper)).status).toBe(401);
    const notReader = await scrapeHttps({ ...scraper, bearer: token });
    expect(notReader.status).toBe(403);
    expect(notReader.body).not.toContain("controller_runtime");
    expect((await scrapeHttps({ ...scraper, bearer: `${prometheus.slice(0, -4)}AAAA` })).status).toBe(401);
    await expect(fetch(`http://${metrics}/metrics`, { signal: AbortSignal.timeout(5000) })).rejects.toThrow();
  });

  it("helm uninstall removes the operator's cluster objects but keeps the sandbox namespace", async () => {
    if (controller && controller.exitCode === null) controller.kill("SIGTERM");
    await helm(["uninstall", RELEASE, "--namespace", release]);
    const roles = await kubectl(["get", "clusterroles", "-o", "name"]);
    expect(roles.stdout).not.toContain(FULLNAME);
    const policy = await kubectl(["get", "leviathpolicy", "cluster"], { allowFailure: true });
    expect(policy.stderr).toContain("NotFound");
    expect((await testCluster().core.readNamespace({ name: SANDBOX })).status?.phase).toBe("Active");
  });
});
