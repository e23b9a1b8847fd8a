// `leviath controller --metrics-secure` against the real API server: /metrics over HTTPS, a service account's
// token that RBAC lets `get` /metrics is served, a valid token RBAC does not allow is refused (403), and no or a
// forged token is unauthenticated (401). The reviews are the API server's own TokenReview and SubjectAccessReview.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyObjects, createRestrictedNamespace, deleteNamespace, installCrds, scrapeHttps, serviceAccountToken, testCluster, waitFor } from "../harness/index.ts";
import { startControllerProcess, type ControllerProcess } from "./process-harness.ts";

let namespace = "";
let proc: ControllerProcess;
let address = "";
let ca: Buffer;
const certDir = mkdtempSync(join(tmpdir(), "leviath-metrics-tls-"));

const token = (sa: string) => serviceAccountToken(namespace, sa);
const scrape = (bearer?: string) => scrapeHttps({ address, ca, servername: "localhost", bearer });

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("metrics");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=localhost",
    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", join(certDir, "tls.key"), "-out", join(certDir, "tls.crt")], { stdio: "ignore" });
  ca = readFileSync(join(certDir, "tls.crt"));
  const reader = `leviath-metrics-reader-${namespace}`;
  await applyObjects([
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "scraper", namespace } },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "stranger", namespace } },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: reader }, rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }] } as never,
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: reader }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: reader }, subjects: [{ kind: "ServiceAccount", name: "scraper", namespace }] } as never,
  ]);
  proc = startControllerProcess(["--metrics-secure", "--metrics-cert-dir", certDir]);
  await waitFor(async () => proc.logs.some((l) => l["msg"] === "controller started") || proc.child.exitCode !== null, { timeoutMs: 60_000, description: "controller started" });
  const started = proc.logs.find((l) => l["msg"] === "controller started") as { addresses: { metrics: string }; metricsSecure: boolean };
  expect(started.metricsSecure).toBe(true);
  address = started.addresses.metrics;
}, 120_000);

afterAll(async () => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGTERM");
  await proc?.exited;
  const reader = `leviath-metrics-reader-${namespace}`;
  const rbac = testCluster().objects;
  for (const kind of ["ClusterRoleBinding", "ClusterRole"]) await rbac.delete({ apiVersion: "rbac.authorization.k8s.io/v1", kind, metadata: { name: reader } }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("secure metrics", () => {
  it("serves a token RBAC allows to get /metrics, over TLS, with output promtool accepts", async () => {
    const r = await scrape(await token("scraper"));
    expect(r.status).toBe(200);
    expect(r.body).toContain("controller_runtime_reconcile_total{");
    expect(r.body).toMatch(/^leviath_build_info\{/m);
    const check = execFileSync("promtool", ["check", "metrics"], { input: r.body, encoding: "utf8" });
    expect(check).toBe("");
  });

  it("refuses a valid token whose user RBAC does not allow (403), and no or a forged token (401)", async () => {
    const refused = await scrape(await token("stranger"));
    expect(refused.status).toBe(403);
    expect(refused.body).not.toContain("controller_runtime");
    expect((await scrape()).status).toBe(401);
    const forged = await scrape("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06YWRtaW4ifQ.AAAA");
    expect(forged.status).toBe(401);
    expect(forged.body).not.toContain("controller_runtime");
  });

  it("does not answer plain HTTP", async () => {
    await expect(fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(5000) }).then((r) => r.status)).rejects.toThrow();
  });
});
