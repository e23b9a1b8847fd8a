// What the sidecar keeps in the cluster, against the real API server and under exactly the per-Run Role the
// controller builds (a token of the Run's ServiceAccount, from the TokenRequest API): an allowed submit_output
// becomes the Run's result (inline, or in the `<run>-result` ConfigMap beyond 4096 bytes), one over the bound is
// refused and one refused by permission stores nothing; every audit record is a `leviath_audit` line on stdout
// and in the `<run>-audit-NNN` ConfigMaps, owned by the Run, readable with one kubectl command after the
// sidecar stopped; the Role lets the sidecar read no other ConfigMap.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_RESULT_BYTES } from "../../src/api/status.ts";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "./harness/index.ts";
import { createRunWithSidecarIdentity, RECORDS_RUN_POLICY } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const RUN = "records-run";
let namespace = "";
let sc: SidecarProcess;
let kubeconfig = "";

const readRun = async () => (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: { result?: Record<string, unknown> } };

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("records");
  const root = makeTempDir("leviath-sidecar-records-");
  kubeconfig = await createRunWithSidecarIdentity(namespace, RUN, root);
  await kubectl(["create", "configmap", "someone-elses", "-n", namespace, "--from-literal=secret=value"]);
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(RECORDS_RUN_POLICY));
  sc = await startSidecar(["--run-policy", join(root, "run-policy.json"), "--run", RUN, "--namespace", namespace, "--kubeconfig", kubeconfig, "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")]);
}, 120_000);

afterAll(async () => {
  if (sc && sc.proc.exitCode === null) await sc.stop();
  if (namespace) await deleteNamespace(namespace);
});

describe("the sidecar's records in a cluster", () => {
  it("stores a small allowed submit_output inline in the Run's status", async () => {
    expect((await callTool(sc, "submit_output", { output: "short answer\n" }, "out-1")).body).toMatchObject({ decision: "run" });
    const run = await waitFor(async () => {
      const r = await readRun();
      return r.status?.result?.["callId"] === "out-1" ? r : undefined;
    }, { description: "the inline result on the Run" });
    expect(run.status?.result).toMatchObject({ inline: "short answer\n", bytes: 13, stage: "main" });
    expect(run.status?.result?.["configMapName"]).toBeUndefined();
  });

  it("stores a larger one in the Run's result ConfigMap, owned by the Run, and names it in the status", async () => {
    const big = "x".repeat(10_000);
    expect((await callTool(sc, "submit_output", { output: big }, "out-2")).body).toMatchObject({ decision: "run" });
    const cm = await testCluster().core.readNamespacedConfigMap({ name: `${RUN}-result`, namespace });
    expect(cm.data?.["result"]).toBe(big);
    expect(cm.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", name: RUN, controller: false })]);
    expect(cm.metadata?.labels).toMatchObject({ "app.kubernetes.io/managed-by": "leviath-sidecar", "leviath.dev/component": "result" });
    const run = await waitFor(async () => {
      const r = await readRun();
      return r.status?.result?.["callId"] === "out-2" ? r : undefined;
    }, { description: "the ConfigMap result on the Run" });
    expect(run.status?.result).toMatchObject({ configMapName: `${RUN}-result`, bytes: 10_000 });
    expect(run.status?.result?.["inline"]).toBeUndefined();
  });

  it("refuses an output over the bound, and stores nothing for it or for a call refused by permission", async () => {
    const tooBig = await callTool(sc, "submit_output", { output: "y".repeat(MAX_RESULT_BYTES + 1) }, "out-3");
    expect(tooBig.status).toBe(400);
    expect(tooBig.body).toMatchObject({ decision: "deny", code: "result-too-large" });
    expect(String((tooBig.body as { message?: string }).message)).toContain(`at most ${MAX_RESULT_BYTES}`);
    await new Promise((r) => setTimeout(r, 2500));
    expect((await readRun()).status?.result?.["callId"]).toBe("out-2");
    expect((await testCluster().core.readNamespacedConfigMap({ name: `${RUN}-result`, namespace })).data?.["result"]).toBe("x".repeat(10_000));
  });

  it("cannot read a ConfigMap that is not its own with the Run's Role", async () => {
    const own = await kubectl(["--kubeconfig", kubeconfig, "get", "configmap", `${RUN}-result`, "-n", namespace], { allowFailure: true });
    expect(own.exitCode, own.stderr).toBe(0);
    const other = await kubectl(["--kubeconfig", kubeconfig, "get", "configmap", "someone-elses", "-n", namespace], { allowFailure: true });
    expect(other.exitCode).not.toBe(0);
    expect(other.stderr).toMatch(/forbidden/);
  });

  it("keeps every audit record, on stdout and in the audit ConfigMaps, readable with one command after it stopped", async () => {
    expect((await callTool(sc, "send_email", { to: "a@example.com" }, "mail-1")).body).toMatchObject({ decision: "deny", code: "permission-denied" });
    expect(await sc.stop()).toBe(0);
    const stdout = sc.stdout().split("\n").filter((l) => l.startsWith('{"leviath_audit"'));
    const text = (await kubectl(["get", "configmap", "-n", namespace, "-l", `leviath.dev/run=${RUN},leviath.dev/component=audit`,
      "-o", "jsonpath={range .items[*]}{.data.audit\\.jsonl}{end}"])).stdout;
    const stored = text.split("\n").filter((l) => l.startsWith("{"));
    expect(stored).toEqual(stdout);
    const records = stored.map((l) => (JSON.parse(l) as { leviath_audit: { file: string; record: Record<string, unknown> } }).leviath_audit);
    expect(records.map((r) => [r.record["call_id"], r.record["decision"], r.record["code"]])).toEqual([
      ["out-1", "allow", undefined], ["out-2", "allow", undefined], ["out-3", "deny", "result-too-large"], ["mail-1", "deny", "permission-denied"],
    ]);
    expect(records.every((r) => r.file === "stages/0/decisions.jsonl")).toBe(true);
    const cm = await testCluster().core.readNamespacedConfigMap({ name: `${RUN}-audit-000`, namespace });
    expect(cm.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", name: RUN })]);
  });
});
