// Safe by default (issue 29): a `helm install` with nothing but the sandbox namespace's name, against the real API
// server, installs the operator's validating webhook and its own LeviathPolicy together (the policy's webhook is
// skipped while no replica answers), turns on the NetworkPolicy enforcement check in the sandbox namespace, and
// fails closed for what users write: with no controller replica running (no node here), no Agent or Run is admitted.
import { describe, expect, it } from "vitest";
import { POLICY_WEBHOOK_NAME, WEBHOOK_NAME } from "../../../src/controller/admission/webhook-app.ts";
import { helm, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { OURS } from "../controller/operator-harness.ts";
import { CHART, useTestRelease } from "./chart-harness.ts";

const fixture = useTestRelease("safe");
const RELEASE = fixture.name;
const FULLNAME = fixture.fullname;
const SANDBOX = fixture.sandbox;

describe("helm install with the default values", () => {
  it("succeeds, with the webhook and the chart's policy, which verifies NetworkPolicy enforcement in the sandbox namespace", async () => {
    const result = await helm(["install", RELEASE, CHART, "--namespace", fixture.namespace(), "--set", `sandboxNamespace.name=${SANDBOX}`], { allowFailure: true, timeoutMs: 120_000 });
    expect(result.exitCode, result.stderr).toBe(0);
    const vwc = JSON.parse((await kubectl(["get", "validatingwebhookconfiguration", `${FULLNAME}-specs`, "-o", "json"])).stdout) as { webhooks: { name: string; failurePolicy: string }[] };
    expect(vwc.webhooks.map((w) => [w.name, w.failurePolicy])).toEqual([[WEBHOOK_NAME, "Fail"], [POLICY_WEBHOOK_NAME, "Ignore"]]);
    const policy = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { spec: Record<string, unknown> };
    expect(policy.spec["networkEnforcement"]).toEqual({ verify: true, namespace: SANDBOX, onUnverified: "warn" });
  });

  it("refuses every Agent and Run while no controller replica answers the webhook", async () => {
    const agent = JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "digest", namespace: SANDBOX }, spec: {} });
    const refused = await waitFor(async () => {
      // A dry run, so that a write admitted before the configuration takes effect stores nothing.
      const r = await kubectl(["create", "--dry-run=server", "-f", "-"], { input: agent, allowFailure: true });
      return r.exitCode !== 0 ? r : undefined;
    }, { timeoutMs: 30_000, description: "the webhook configuration to take effect" });
    expect(refused.stderr).toContain(`failed calling webhook "${WEBHOOK_NAME}"`);
    const run = JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "r", namespace: SANDBOX }, spec: { agentRef: { name: "digest" } } });
    const runResult = await kubectl(["create", "-f", "-"], { input: run, allowFailure: true });
    expect(runResult.exitCode).not.toBe(0);
    expect(runResult.stderr).toContain(`failed calling webhook "${WEBHOOK_NAME}"`);
  });

  it("helm uninstall removes the webhook configuration, so nothing stays refused", async () => {
    await helm(["uninstall", RELEASE, "--namespace", fixture.namespace()]);
    const left = await kubectl(["get", "validatingwebhookconfiguration", `${FULLNAME}-specs`], { allowFailure: true });
    expect(left.stderr).toContain("NotFound");
  });
});
