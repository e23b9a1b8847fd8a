// The rendered chart against the real API server: server-side dry runs with strict field validation (CRDs
// installed for real first, so the LeviathPolicy and the monitoring objects are validated by their schemas),
// and the controller's pod under Pod Security `restricted`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, uniqueName } from "../harness/index.ts";
import { applyStream, findManifest, parseManifests, renderChart, toStream, type Manifest } from "./chart-harness.ts";

const MONITORING_CRDS = ["servicemonitors", "podmonitors", "prometheusrules"].map((p) => `${p}.monitoring.coreos.com`);
let release = "";
let sandbox = "";
const extra: string[] = [];

beforeAll(async () => {
  await installCrds("charts/leviath-operator/crds/");
  await installCrds("test/integration/chart/fixtures/");
  release = await createRestrictedNamespace("chart-release");
  sandbox = uniqueName("chart-sandbox");
});

afterAll(async () => {
  for (const ns of [release, sandbox, ...extra]) if (ns) await deleteNamespace(ns);
  for (const name of MONITORING_CRDS) await testCluster().apiext.deleteCustomResourceDefinition({ name }).catch(() => undefined);
});

/** Renders, creates the chart's namespaces for real (namespaced objects need them), then dry-runs everything. */
async function dryRunChart(args: string[]): Promise<{ manifests: Manifest[]; stdout: string; stderr: string }> {
  const manifests = parseManifests(await renderChart("leviath-operator", release, ["--set", `sandboxNamespace.name=${sandbox}`, ...args]));
  const namespaces = manifests.filter((m) => m.kind === "Namespace");
  if (namespaces.length > 0) await applyStream(toStream(namespaces), { persist: true });
  const r = await applyStream(toStream(manifests));
  return { manifests, stdout: r.stdout, stderr: r.stderr };
}

describe("the chart on the real API server (server-side dry run)", () => {
  it("accepts every object of the default install, without Pod Security warnings", async () => {
    const { manifests, stdout, stderr } = await dryRunChart([]);
    expect(stderr).toBe("");
    for (const m of manifests) {
      const kind = m.kind.toLowerCase();
      expect(stdout, `${m.kind}/${m.metadata.name}`).toMatch(new RegExp(`^${kind}[.a-z0-9]*/${m.metadata.name} serverside-applied \\(server dry run\\)$`, "m"));
    }
    expect(stdout).toContain("leviathpolicy.leviath.dev/cluster serverside-applied (server dry run)");
  });

  it("accepts the cluster-wide install with the ServiceMonitor, PodMonitor, PrometheusRule and dashboard", async () => {
    extra.push(uniqueName("team-a"));
    await kubectl(["create", "namespace", extra[0]!]);
    const { stdout, stderr } = await dryRunChart(["--set", `rbac.scope=cluster,rbac.namespaces={${extra[0]}},metrics.serviceMonitor.enabled=true,metrics.podMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboards.enabled=true`]);
    expect(stderr).toBe("");
    for (const what of ["servicemonitor.monitoring.coreos.com/", "podmonitor.monitoring.coreos.com/", "prometheusrule.monitoring.coreos.com/", "clusterrolebinding.rbac.authorization.k8s.io/leviath-operator-write"]) {
      expect(stdout).toContain(what);
    }
  });

  it("refuses a policy.spec field the LeviathPolicy schema does not have, naming it", async () => {
    // values.schema.json carries the LeviathPolicy schema, so Helm refuses before anything reaches the cluster
    // (what the API server does with a typo that bypasses Helm is test/integration/admission/strict-keys.test.ts).
    const err = await renderChart("leviath-operator", release, ["--set", `sandboxNamespace.name=${sandbox}`, "--set", "policy.spec.sandbox.kinds=gvisor"])
      .then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).toContain("at '/policy/spec/sandbox': additional properties 'kinds' not allowed");
  });

  it("the monitoring stand-in CRDs refuse a misplaced field (so the acceptance above means something)", async () => {
    const manifests = parseManifests(await renderChart("leviath-operator", release, ["--set", `sandboxNamespace.name=${sandbox},metrics.serviceMonitor.enabled=true`]));
    const sm = findManifest(manifests, "ServiceMonitor") as Manifest & { spec: { endpoints: Record<string, unknown>[] } };
    sm.spec.endpoints[0]!["targetPorts"] = "metrics";
    const r = await applyStream(toStream([sm]), { allowFailure: true });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(".spec.endpoints[0].targetPorts: field not declared in schema");
  });
});

describe("the controller pod under Pod Security restricted", () => {
  it("is admitted as a Pod in a namespace that enforces restricted", async () => {
    const manifests = parseManifests(await renderChart("leviath-operator", release, ["--set", `sandboxNamespace.name=${sandbox}`]));
    const template = (findManifest(manifests, "Deployment") as Manifest & { spec: { template: { metadata: Record<string, unknown>; spec: Record<string, unknown> } } }).spec.template;
    // Admission looks the pod's ServiceAccount up: create it for real.
    await applyStream(toStream([findManifest(manifests, "ServiceAccount")]), { persist: true });
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { ...template.metadata, name: "controller-template", namespace: release }, spec: template.spec };
    const admitted = await kubectl(["create", "--dry-run=server", "-f", "-", "-o", "name"], { input: JSON.stringify(pod) });
    expect(admitted.stdout.trim()).toBe("pod/controller-template");
    expect(admitted.stderr).toBe("");

    // The same check refuses a pod that weakens the container's security context.
    const spec = structuredClone(template.spec) as { containers: { securityContext: Record<string, unknown> }[] };
    spec.containers[0]!.securityContext = { ...spec.containers[0]!.securityContext, allowPrivilegeEscalation: true };
    const refused = await kubectl(["create", "--dry-run=server", "-f", "-"], { input: JSON.stringify({ ...pod, spec }), allowFailure: true });
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false');
  });
});
