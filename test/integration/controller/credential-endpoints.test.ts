// A credential goes only to the endpoints its Secret's owner ties to it (issue 41, finding 2), against the real API
// server. A Run's creator bound to the chart's edit role, who may not read the team's opted-in model key, names it
// as a credential and points `runtime.providers.anthropic.baseUrl` at their own server: the Run never starts
// (RefusedByPolicy naming the field and the Secret), no pod receives the key. A base URL the Secret's annotation
// `leviath.dev/credential-endpoints` lists is used, and what each Secret ties is pinned into runtime.json, where
// the runtime checks it again (test/cli/agent-credential-endpoints.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster } from "../harness/index.ts";
import { bindChartEditRole, kubectlAs } from "./chart-edit-role.ts";
import { applyPolicy, childrenOf, conditionOf, OURS, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator | undefined;
const CREATOR = "run-creator";

const core = () => testCluster().core;
const createSecret = (name: string, annotations: Record<string, string> = {}) => core().createNamespacedSecret({
  namespace, body: { metadata: { name, namespace, labels: { "leviath.dev/credential": "true" }, annotations }, stringData: { ANTHROPIC_API_KEY: `sk-${name}` } },
});

/** Creates the Agent and the Run as CREATOR (the chart's edit role), the Run naming `secret` and pointing anthropic at `baseUrl`. */
async function createAsCreator(name: string, secret: string, baseUrl: string): Promise<void> {
  const manifests = [
    { apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name, namespace }, spec: { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "container", image: "alpine:3" } } },
    {
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name, namespace },
      spec: { agentRef: { name }, credentials: [{ secretName: secret, as: "env" }], runtime: { providers: { anthropic: { baseUrl } } } },
    },
  ];
  for (const m of manifests) {
    const created = await kubectlAs(CREATOR, ["create", "-f", "-"], JSON.stringify(m));
    expect(created.exitCode, created.stderr).toBe(0);
  }
}

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("credential-endpoints");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  await applyPolicy({});
  await bindChartEditRole(namespace, CREATOR);
  await createSecret("team-key");
  await createSecret("gateway-key", { "leviath.dev/credential-endpoints": "https://llm-gateway.internal/anthropic" });
  op = await startTestOperator();
}, 120_000);

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("a credential's endpoints", { timeout: 120_000 }, () => {
  it("keep a Run from sending another party's key to a server the Run picks: refused, naming the field and the Secret", async () => {
    // The creator may neither read the key nor tie it to an endpoint themselves.
    const read = await kubectlAs(CREATOR, ["get", "secret", "team-key", "-n", namespace, "-o", "json"]);
    expect(read.exitCode).not.toBe(0);
    expect(read.stderr).toContain(`User "${CREATOR}" cannot get resource "secrets"`);
    const annotate = await kubectlAs(CREATOR, ["annotate", "secret", "team-key", "-n", namespace, "leviath.dev/credential-endpoints=https://collector.attacker.example"]);
    expect(annotate.exitCode).not.toBe(0);

    await createAsCreator("exfil", "team-key", "https://collector.attacker.example");
    const refused = await waitForCustom("runs", namespace, "exfil", (r) => conditionOf(r, "PolicyResolved")?.reason === "RefusedByPolicy", "the Run refused");
    expect(refused.status?.phase).toBe("Pending");
    expect(conditionOf(refused, "PolicyResolved")?.message).toBe(
      "spec.runtime.providers.anthropic.baseUrl 'https://collector.attacker.example' is not an endpoint credential Secret 'team-key' ties (its annotation leviath.dev/credential-endpoints: none); its keys are never sent where a Run points them");
    expect((await childrenOf(namespace, "exfil")).map((c) => c.ref)).toEqual([]);

    // A listed endpoint with the attacker's host behind it is no better: same origin and path only.
    await createAsCreator("lookalike", "gateway-key", "https://llm-gateway.internal.attacker.example/anthropic");
    const lookalike = await waitForCustom("runs", namespace, "lookalike", (r) => conditionOf(r, "PolicyResolved")?.reason === "RefusedByPolicy", "the lookalike refused");
    expect(conditionOf(lookalike, "PolicyResolved")?.message).toContain("credential Secret 'gateway-key' ties (its annotation leviath.dev/credential-endpoints: https://llm-gateway.internal/anthropic)");
    expect((await childrenOf(namespace, "lookalike")).map((c) => c.ref)).toEqual([]);
  });

  it("use a base URL the Secret's owner tied, and pin what each Secret ties for the runtime to check again", async () => {
    await createAsCreator("tied", "gateway-key", "https://llm-gateway.internal/anthropic/v1");
    await waitForCustom("runs", namespace, "tied", (r) => typeof r.status?.["snapshotSha256"] === "string", "the Run pinned");
    const runtime = JSON.parse((await core().readNamespacedConfigMap({ name: "tied-policy", namespace })).data!["runtime.json"]!) as Record<string, unknown>;
    expect(runtime["credentialEndpoints"]).toEqual([{ secretName: "gateway-key", endpoints: ["https://llm-gateway.internal/anthropic"] }]);
    await expect.poll(async () => (await childrenOf(namespace, "tied")).map((c) => c.ref), { timeout: 30_000 }).toContain("Pod/tied-engine");
  });
});
