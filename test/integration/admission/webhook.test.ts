// The operator's validating webhook against the real API server: what only the operator's parsers can check
// (read-path entry syntax, CEL rules, the Agent's name) is refused at admission, naming the entry, for
// kubectl --validate=false, a raw request without fieldValidation and Helm alike; a webhook that is down refuses
// everything (failurePolicy Fail); and the certificates it keeps in a Secret are renewed, the caBundle with them,
// while it goes on admitting. The API server reaches it through a `url` on loopback.
import { X509Certificate } from "node:crypto";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POLICY_WEBHOOK_NAME, WEBHOOK_NAME, WEBHOOK_PATH } from "../../../src/controller/admission/webhook-app.ts";
import { CERT_KEYS } from "../../../src/controller/admission/webhook-certificates.ts";
import { createKubeClient } from "../../../src/kube/client.ts";
import { KubeApiError } from "../../../src/kube/errors.ts";
import { freePorts } from "../harness/loopback.ts";
import { createRestrictedNamespace, deleteNamespace, helm, installCrds, kubectl, testCluster, uniqueName, waitFor } from "../harness/index.ts";
import { startTestOperator, type TestOperator } from "../controller/operator-harness.ts";
import { findManifest, parseManifests, renderChart, type Manifest } from "../chart/chart-harness.ts";

const API = "leviath.dev/v1alpha1";
const SECRET = "leviath-webhook-tls";
let namespace = "";
let configuration = "";
let port = 0;
let op: TestOperator | undefined;

const BAD_REGEX = "regex:/data/x)|(.*";
const agent = (name: string, spec: Record<string, unknown>) => ({ apiVersion: API, kind: "Agent", metadata: { name, namespace }, spec });
const badAgent = (name: string) => agent(name, { readPaths: { allow: ["/data/ok", BAD_REGEX] } });
const badPolicy = { apiVersion: API, kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { taint: { rules: [{ name: "good", expression: "tool == 'x'" }, { name: "broken", expression: "tool ==" }] } } };

const RELEASE = "lev";
let chart: Manifest[] = [];

/** The chart's ValidatingWebhookConfiguration, reached on loopback instead of through its Service. */
function webhookConfiguration(): Record<string, unknown> {
  const rendered = findManifest(chart, "ValidatingWebhookConfiguration");
  const hooks = rendered["webhooks"] as Record<string, unknown>[];
  // Fail closed for what users write; the admin's policy is skipped while no replica answers (the chart's own policy
  // installs with the controller), and parsed by the controller either way.
  expect(hooks.map((h) => [h["name"], h["failurePolicy"]])).toEqual([[WEBHOOK_NAME, "Fail"], [POLICY_WEBHOOK_NAME, "Ignore"]]);
  return {
    ...rendered,
    metadata: { name: configuration },
    webhooks: hooks.map((h) => ({
      ...h,
      clientConfig: { url: `https://127.0.0.1:${port}${WEBHOOK_PATH}` },
      // Only this file's namespace (and the cluster-scoped policy, which namespaceSelector does not filter).
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
    })),
  };
}

const startOperator = (validity: { caValidityMs?: number; certValidityMs?: number } = {}) => startTestOperator({}, {
  webhook: {
    host: "127.0.0.1", port, checkIntervalMs: 500,
    certificates: { kind: "managed", secret: { namespace, name: SECRET }, configurationName: configuration, hosts: ["127.0.0.1"], caValidityMs: validity.caValidityMs ?? 86_400_000, certValidityMs: validity.certValidityMs ?? 3_600_000 },
  },
});

const applyLoose = (obj: unknown, extra: string[] = []) => kubectl(["apply", "--validate=false", ...extra, "-f", "-"], { input: JSON.stringify(obj), allowFailure: true });

const readCaBundle = async () => {
  const vwc = await testCluster().kc.makeApiClient((await import("@kubernetes/client-node")).AdmissionregistrationV1Api).readValidatingWebhookConfiguration({ name: configuration });
  return Buffer.from(vwc.webhooks?.[0]?.clientConfig.caBundle ?? "", "base64").toString("utf8");
};
const readSecret = async () => {
  const s = await testCluster().core.readNamespacedSecret({ name: SECRET, namespace });
  const get = (k: string) => Buffer.from(s.data?.[k] ?? "", "base64").toString("utf8");
  return { caBundle: get(CERT_KEYS.caBundle), cert: get(CERT_KEYS.cert) };
};

/** Waits until a dry run of a bad Agent is refused by the webhook itself (not by a failed call). */
const waitForWebhook = () => waitFor(async () => {
  const r = await applyLoose(badAgent(uniqueName("probe")), ["--dry-run=server"]);
  return r.stderr.includes(`admission webhook "${WEBHOOK_NAME}" denied the request`) ? r : undefined;
}, { timeoutMs: 30_000, description: "the webhook to answer" });

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("webhook");
  configuration = uniqueName("leviath-webhook-test");
  [port] = await freePorts(1) as [number];
  chart = parseManifests(await renderChart(RELEASE, namespace, ["--set", "admission.webhook.enabled=true", "--show-only", "templates/webhook.yaml"]));
  await kubectl(["apply", "-f", "-"], { input: JSON.stringify(webhookConfiguration()) });
  op = await startOperator();
  await waitForWebhook();
});

afterAll(async () => {
  await op?.stop();
  if (configuration) await kubectl(["delete", "validatingwebhookconfiguration", configuration, "--ignore-not-found"], { allowFailure: true });
  await kubectl(["delete", "clusterrole,clusterrolebinding", `${RELEASE}-leviath-operator-webhook-ca`, "--ignore-not-found"], { allowFailure: true });
  if (namespace) await deleteNamespace(namespace);
});

describe("the validating webhook", () => {
  it("patched its CA into the configuration, and serves a certificate that CA signed, kept in the Secret", async () => {
    const caBundle = await readCaBundle();
    const secret = await readSecret();
    expect(caBundle).toBe(secret.caBundle);
    const served = new X509Certificate(op!.operator.webhook!.servingCertificate());
    expect(served.verify(new X509Certificate(caBundle).publicKey)).toBe(true);
    expect(served.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(secret.cert).toBe(op!.operator.webhook!.servingCertificate());
  });

  it("the chart lets the operator's ServiceAccount keep exactly its Secret and its configuration", async () => {
    const rbac = chart.filter((m) => m.kind.startsWith("Role") || m.kind.startsWith("ClusterRole"));
    await kubectl(["apply", "-f", "-"], { input: rbac.map((m) => JSON.stringify(m)).join("\n---\n") });
    const as = `system:serviceaccount:${namespace}:${RELEASE}-leviath-operator`;
    const canI = async (...args: string[]) => (await kubectl(["auth", "can-i", ...args, "--as", as], { allowFailure: true })).stdout.trim();
    expect(await canI("update", `secret/${RELEASE}-leviath-operator-webhook-tls`, "-n", namespace)).toBe("yes");
    expect(await canI("get", "secret/some-other", "-n", namespace)).toBe("no");
    expect(await canI("update", `validatingwebhookconfiguration/${RELEASE}-leviath-operator-specs`)).toBe("yes");
    expect(await canI("update", "validatingwebhookconfiguration/someone-elses")).toBe("no");
  });

  it("refuses kubectl apply --validate=false of an Agent whose read-path entry does not parse, naming the entry", async () => {
    const r = await applyLoose(badAgent("bad-entry"));
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(`admission webhook "${WEBHOOK_NAME}" denied the request: Agent bad-entry: spec.readPaths.allow[1]:`);
    expect(r.stderr).toContain(BAD_REGEX);
    expect((await kubectl(["get", "agent", "bad-entry", "-n", namespace, "--ignore-not-found", "-o", "name"])).stdout.trim()).toBe("");
  });

  it("refuses an Agent whose spec.agent.name is not its metadata.name (the CRD's rule answers first)", async () => {
    const r = await applyLoose(agent("named", { agent: { name: "someone-else" } }));
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("spec.agent.name must equal metadata.name");
  });

  it("refuses a LeviathPolicy whose CEL rule does not compile, naming the rule", async () => {
    const r = await applyLoose(badPolicy, ["--dry-run=server"]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("LeviathPolicy cluster: spec.taint.rules[1] (broken): compile-error:");
  });

  it("refuses a LeviathPolicy grant that does not parse", async () => {
    const r = await applyLoose({ ...badPolicy, spec: { readPaths: { perAgent: { [`${namespace}/a`]: [BAD_REGEX] } } } }, ["--dry-run=server"]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(`spec.readPaths.perAgent["${namespace}/a"][0]:`);
  });

  it("refuses a raw request that sends no fieldValidation parameter", async () => {
    const client = createKubeClient(testCluster().kc);
    const err = await client.request("POST", `/apis/leviath.dev/v1alpha1/namespaces/${namespace}/agents`, { body: badAgent("raw") }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).message).toContain("spec.readPaths.allow[1]:");
  });

  it("refuses what Helm installs (Helm asks for no strict validation), naming the entry", async () => {
    const dir = await mkdtemp(join(tmpdir(), "leviath-webhook-chart-"));
    try {
      await mkdir(join(dir, "templates"));
      await writeFile(join(dir, "Chart.yaml"), "apiVersion: v2\nname: typo\nversion: 0.1.0\n");
      await writeFile(join(dir, "templates", "agent.yaml"), JSON.stringify(badAgent("from-helm")));
      const r = await helm(["install", "typo", dir, "--namespace", namespace], { allowFailure: true });
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toContain(`denied the request: Agent from-helm: spec.readPaths.allow[1]:`);
    } finally {
      await helm(["uninstall", "typo", "--namespace", namespace], { allowFailure: true });
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("admits a valid Agent, and an update that leaves an already stored spec as it was", async () => {
    const ok = await applyLoose(agent("good", { readPaths: { allow: ["/data/ok", "glob:/data/*.txt", "regex:/data/[a-z]+"] } }));
    expect(ok.exitCode, ok.stderr).toBe(0);
    const label = await kubectl(["label", "agent", "good", "-n", namespace, "team=a"], { allowFailure: true });
    expect(label.exitCode, label.stderr).toBe(0);
  });

  it("refuses a Run and an Approval with a misspelled key, naming it", async () => {
    const run = await applyLoose({ apiVersion: API, kind: "Run", metadata: { name: "r", namespace }, spec: { agentRef: { name: "good" }, moed: "yolo" } });
    expect(run.stderr).toContain('Run r: spec: Unrecognized key: "moed"');
    const approval = await applyLoose({ apiVersion: API, kind: "Approval", metadata: { name: "a", namespace }, spec: { runRef: { name: "r" }, approvalId: "x", decision: "allowOnce", reasn: "ok" } });
    expect(approval.stderr).toContain('Approval a: spec: Unrecognized key: "reasn"');
  });

  it("fails closed: with the webhook down every write is refused, a valid one too", async () => {
    await op!.stop();
    op = undefined;
    const r = await applyLoose(agent("while-down", {}));
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(`failed calling webhook "${WEBHOOK_NAME}"`);
    // The admin's policy is not held up by it (so the chart's own installs with the controller): admitted unchecked.
    const policy = await applyLoose({ ...badPolicy, spec: { security: { taintTracking: true } } }, ["--dry-run=server"]);
    expect(policy.exitCode, policy.stderr).toBe(0);
    op = await startOperator();
    await waitForWebhook();
    const after = await applyLoose(agent("while-down", {}));
    expect(after.exitCode, after.stderr).toBe(0);
  });

  it("renews the serving certificate and the CA before they expire, patches the caBundle, and keeps admitting", async () => {
    await op!.stop();
    // A fresh Secret (the one kept so far holds a CA of a day); the new CA is patched in before it is served.
    await testCluster().core.deleteNamespacedSecret({ name: SECRET, namespace });
    // A CA of 20 s and certificates of 8 s: each is renewed with a third of its life left.
    op = await startOperator({ caValidityMs: 20_000, certValidityMs: 8_000 });
    await waitForWebhook();
    const first = await readSecret();
    const firstCa = new X509Certificate(first.caBundle);
    const rotated = await waitFor(async () => {
      const s = await readSecret();
      const ca = new X509Certificate(s.caBundle.split(/(?<=-----END CERTIFICATE-----\n)/)[0]!);
      return ca.serialNumber !== firstCa.serialNumber ? s : undefined;
    }, { timeoutMs: 40_000, intervalMs: 500, description: "the CA to be renewed" });
    // The previous CA stays trusted next to the new one while certificates it signed may still be served.
    expect(rotated.caBundle).toContain(first.caBundle.trim());
    await waitFor(async () => ((await readCaBundle()) === (await readSecret()).caBundle ? true : undefined), { timeoutMs: 10_000, description: "the caBundle to follow" });
    await waitFor(async () => (op!.operator.webhook!.servingCertificate() === (await readSecret()).cert ? true : undefined), { timeoutMs: 10_000, description: "the renewed certificate to be served" });
    expect(new X509Certificate(op!.operator.webhook!.servingCertificate()).serialNumber).not.toBe(new X509Certificate(first.cert).serialNumber);
    const refused = await applyLoose(badAgent("after-rotation"));
    expect(refused.stderr).toContain("denied the request: Agent after-rotation: spec.readPaths.allow[1]:");
    const admitted = await applyLoose(agent("after-rotation", {}));
    expect(admitted.exitCode, admitted.stderr).toBe(0);
  });
});
