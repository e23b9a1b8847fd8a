import { describe, expect, it } from "vitest";
import { findManifest, parseManifests, renderChart, renderChartResult, type Manifest } from "./chart-harness.ts";

// The chart's approval webhook (issue 43): with a URL, the controller gets the URL and the file of the HMAC key,
// mounted from the Secret named; without one, nothing; a URL without a Secret is refused at render.
type Container = { args: string[]; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] };
type Deployment = Manifest & { spec: { template: { spec: { containers: Container[]; volumes: { name: string; secret?: unknown }[] } } } };

const NS = "leviath-system";
const pod = (ms: Manifest[]) => (findManifest(ms, "Deployment") as Deployment).spec.template.spec;

describe("controller.approvalWebhook", () => {
  it("passes the webhook's URL and its key's file from the Secret named, only when a URL is set", async () => {
    const values = ["--set", "controller.approvalWebhook.url=https://hooks.example/leviath,controller.approvalWebhook.secretName=pager-hmac"];
    const spec = pod(parseManifests(await renderChart("leviath-operator", NS, values)));
    const c = spec.containers[0]!;
    expect(c.args).toEqual(expect.arrayContaining(["--approval-webhook-url=https://hooks.example/leviath", "--approval-webhook-secret-file=/etc/leviath/approval-webhook/hmac-key"]));
    expect(c.volumeMounts).toContainEqual({ name: "approval-webhook", mountPath: "/etc/leviath/approval-webhook", readOnly: true });
    expect(spec.volumes).toContainEqual({ name: "approval-webhook", secret: { secretName: "pager-hmac", items: [{ key: "hmac-key", path: "hmac-key" }] } });

    const off = pod(parseManifests(await renderChart("leviath-operator", NS))).containers[0]!;
    expect(off.args.some((a) => a.startsWith("--approval-webhook"))).toBe(false);

    const refused = await renderChartResult(["--set", "controller.approvalWebhook.url=https://hooks.example/leviath"]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain("controller.approvalWebhook.secretName is required with controller.approvalWebhook.url");
  });
});
