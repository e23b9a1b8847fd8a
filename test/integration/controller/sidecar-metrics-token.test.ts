// The sidecars' scrape token against the real API server: `leviath controller --sidecar-metrics-token-secret`
// creates the Secret with a fresh token when it is absent, keeps it when present (two replicas racing agree), and
// refuses to start on a Secret whose token is missing or too short rather than hand engine pods a guessable digest.
// Its `--metrics-secure` without a certificate directory serves HTTPS with a certificate made at start.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueCertificate } from "../../../src/controller/admission/x509.ts";
import { ensureSidecarMetricsToken, SIDECAR_METRICS_TOKEN_KEY } from "../../../src/controller/sidecar-metrics-token.ts";
import { createKubeClient, loadKubeConfig } from "../../../src/kube/client.ts";
import { digestMetricsToken } from "../../../src/sidecar/http/metrics-token.ts";
import { applyObjects, createRestrictedNamespace, deleteNamespace, installCrds, scrapeHttps, serviceAccountToken, testCluster, waitFor } from "../harness/index.ts";
import { startControllerProcess, type ControllerProcess } from "./process-harness.ts";

let namespace = "";
const otherCa = () => issueCertificate({ commonName: "someone-else", notBeforeMs: Date.now() - 60_000, notAfterMs: Date.now() + 3_600_000 });
let proc: ControllerProcess | undefined;
const client = () => createKubeClient(loadKubeConfig(testCluster().kubeconfigPath));
const readToken = async (name: string) => {
  const secret = await testCluster().core.readNamespacedSecret({ name, namespace });
  return Buffer.from(secret.data?.[SIDECAR_METRICS_TOKEN_KEY] ?? "", "base64").toString("utf8");
};

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("scrape-token");
});

afterAll(async () => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGTERM");
  await proc?.exited;
  if (namespace) await deleteNamespace(namespace);
});

describe("the sidecars' scrape token", () => {
  it("is created once, 256 random bits, and read back by every later (or racing) caller", async () => {
    const [a, b] = await Promise.all([ensureSidecarMetricsToken(client(), namespace, "race"), ensureSidecarMetricsToken(client(), namespace, "race")]);
    expect(a).toBe(b);
    const token = await readToken("race");
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(a).toBe(digestMetricsToken(token));
    expect(await ensureSidecarMetricsToken(client(), namespace, "race")).toBe(a);
    expect(await ensureSidecarMetricsToken(client(), namespace, "other")).not.toBe(a);
  });

  it.each([
    ["without the key", { other: Buffer.from("x".repeat(40)).toString("base64") }],
    ["with a short token", { [SIDECAR_METRICS_TOKEN_KEY]: Buffer.from("short").toString("base64") }],
    ["with an empty token", { [SIDECAR_METRICS_TOKEN_KEY]: "" }],
  ])("refuses a Secret %s, naming it", async (what, data) => {
    const name = `bad-${what.split(" ").pop()}`;
    await applyObjects([{ apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, data } as never]);
    await expect(ensureSidecarMetricsToken(client(), namespace, name)).rejects.toThrow(`secret ${namespace}/${name}: key 'token' must hold a token of at least 32 characters`);
  });

  it("a controller with the flag creates it and says so; --metrics-secure alone serves HTTPS with its own certificate", async () => {
    const reader = `leviath-metrics-reader-${namespace}`;
    await applyObjects([
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "scraper", namespace } },
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: reader }, rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }] } as never,
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: reader }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: reader }, subjects: [{ kind: "ServiceAccount", name: "scraper", namespace }] } as never,
    ]);
    try {
      proc = startControllerProcess(["--metrics-secure", "--sidecar-metrics-token-secret", "scrape", "--leader-election-namespace", namespace]);
      await waitFor(async () => proc!.logs.some((l) => l["msg"] === "controller started") || proc!.child.exitCode !== null, { timeoutMs: 90_000, description: "controller started" });
      const started = proc.logs.find((l) => l["msg"] === "controller started") as { addresses: { metrics: string }; metricsSecure: boolean; sidecarMetrics: boolean };
      expect(started).toMatchObject({ metricsSecure: true, sidecarMetrics: true });
      expect(await readToken("scrape")).toMatch(/^[0-9a-f]{64}$/);
      const address = started.addresses.metrics;
      expect((await scrapeHttps({ address })).status).toBe(401);
      const ok = await scrapeHttps({ address, bearer: await serviceAccountToken(namespace, "scraper") });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatch(/^leviath_build_info\{/m);
      // The certificate is self-signed, made at start: a scraper that verifies against a CA refuses it.
      await expect(scrapeHttps({ address, ca: otherCa().certPem, servername: "localhost" })).rejects.toThrow(/self.signed|unable to verify|certificate/i);
    } finally {
      for (const kind of ["ClusterRoleBinding", "ClusterRole"]) await testCluster().objects.delete({ apiVersion: "rbac.authorization.k8s.io/v1", kind, metadata: { name: reader } }).catch(() => undefined);
    }
  });
});
