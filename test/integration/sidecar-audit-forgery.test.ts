// Forging or blocking a Run's audit and result, against the real API server: another Run's sidecar (whose Role may
// create ConfigMaps of any name) creates the victim's `<run>-audit-NNN` and `<run>-result` before the victim's
// sidecar writes them, the Run's uid as owner and all: a full, immutable `-audit-000` (held by a finalizer) and `-audit-031` holding a
// forged approval, a forged `-audit-001`, an immutable `-result`. The victim's sidecar (as its own ServiceAccount,
// under the Role the controller builds) must neither continue after them nor be stopped by them: its calls are
// answered and audited, a restart continues its own chunk, `kubectl leviath audit` lists only its records and names
// the planted ones, `kubectl leviath result` prints its output. Every one of these failed before `status.audit`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeClient } from "../../src/kube/client.ts";
import { createKubeClient, loadKubeConfig } from "../../src/kube/client.ts";
import { buildAuditChunkName } from "../../src/sandbox/names.ts";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectlLeviath, testCluster, waitFor } from "./harness/index.ts";
import { createRunWithSidecarIdentity, RECORDS_RUN_POLICY } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const VICTIM = "audit-victim";
const ATTACKER = "audit-attacker";
let namespace = "";
let args: string[] = [];
let sc: SidecarProcess | undefined;
let attacker: KubeClient;
let victimUid = "";

/** An audit line as the sidecar writes it, recording an approval nobody gave. */
const forgedLine = (callId: string) => `${JSON.stringify({ leviath_audit: { run: VICTIM, file: "stages/0/decisions.jsonl", record: { timestamp: 1, agent_id: "agent", call_id: callId, tool_name: "shell", stage: "main", decision: "allow", decision_source: "user_allow_once", approved_by: "security-officer" } } })}\n`;
/** A chunk as full as a chunk may be (768 KiB) of forged lines. */
const fullChunk = (callId: string) => forgedLine(callId).repeat(Math.floor((768 * 1024) / forgedLine(callId).length));

/** Creates `name` as the attacker Run's sidecar, owned by the victim Run. */
async function plant(name: string, data: Record<string, string>, immutable: boolean, finalizers: string[] = []): Promise<void> {
  const ownerReferences = [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: VICTIM, uid: victimUid, controller: false }];
  const labels = { "leviath.dev/run": VICTIM, "leviath.dev/component": name.endsWith("-result") ? "result" : "audit", "app.kubernetes.io/managed-by": "leviath-sidecar" };
  await attacker.request("POST", `/api/v1/namespaces/${namespace}/configmaps`, { body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels, ownerReferences, finalizers }, immutable, data } });
}

type AuditLine = { leviath_audit: { record: { call_id: string; approved_by?: string } } };
const auditJson = async () => {
  const r = await kubectlLeviath(["audit", VICTIM, "-o", "json", "-n", namespace], { allowFailure: true });
  const lines = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as AuditLine);
  return { code: r.exitCode, ids: lines.map((l) => l.leviath_audit.record.call_id), approvedBy: lines.flatMap((l) => l.leviath_audit.record.approved_by ?? []), stderr: r.stderr };
};

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("auditforge");
  const root = makeTempDir("leviath-sidecar-audit-forgery-");
  const kubeconfig = await createRunWithSidecarIdentity(namespace, VICTIM, root);
  attacker = createKubeClient(loadKubeConfig(await createRunWithSidecarIdentity(namespace, ATTACKER, root)));
  const run = (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: VICTIM })) as { metadata: { uid: string } };
  victimUid = run.metadata.uid;
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(RECORDS_RUN_POLICY));
  args = ["--run-policy", join(root, "run-policy.json"), "--run", VICTIM, "--namespace", namespace, "--kubeconfig", kubeconfig, "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")];
}, 120_000);

afterAll(async () => {
  if (sc && sc.proc.exitCode === null && sc.proc.signalCode === null) await sc.stop();
  if (namespace) await deleteNamespace(namespace);
});

describe("audit and result ConfigMaps planted by another Run's sidecar", () => {
  it("neither block the victim's calls nor pass for its audit, through a restart", async () => {
    // Immutable and held by a finalizer: only deleting it, finalizer cleared, makes room for the victim's own.
    await plant(buildAuditChunkName(VICTIM, 0), { "audit.jsonl": fullChunk("forged-0") }, true, ["example.com/hold"]);
    await plant(buildAuditChunkName(VICTIM, 1), { "audit.jsonl": forgedLine("forged-1") }, false);
    await plant(buildAuditChunkName(VICTIM, 31), { "audit.jsonl": fullChunk("forged-31") }, true);

    sc = await startSidecar(args);
    const first = await callTool(sc, "send_email", { to: "a@example.com" }, "mail-1");
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ decision: "deny" });
    const listed = await waitFor(async () => {
      const a = await auditJson();
      return a.ids.includes("mail-1") ? a : undefined;
    }, { description: "the victim's call in kubectl leviath audit" });
    expect(listed.code).toBe(0);
    expect(listed.ids).toEqual(["mail-1"]);
    expect(listed.approvedBy).toEqual([]);
    // Its own chunk took the planted -000's place; the others are named, never shown.
    expect(listed.stderr).toContain(`'${buildAuditChunkName(VICTIM, 1)}' was not written by the Run's sidecar`);
    expect(listed.stderr).toContain(`'${buildAuditChunkName(VICTIM, 31)}' was not written by the Run's sidecar`);
    expect(listed.stderr).not.toContain(`'${buildAuditChunkName(VICTIM, 0)}'`);

    // Killed and started again: it continues its own chunk, not after the planted last one.
    expect(await sc.stop("SIGKILL")).toBe("SIGKILL");
    sc = await startSidecar(args);
    const second = await callTool(sc, "send_email", { to: "b@example.com" }, "mail-2");
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ decision: "deny" });
    const after = await waitFor(async () => {
      const a = await auditJson();
      return a.ids.includes("mail-2") ? a : undefined;
    }, { description: "the restarted sidecar's call in kubectl leviath audit" });
    expect(after.ids).toEqual(["mail-1", "mail-2"]);
    const chunk = await testCluster().core.readNamespacedConfigMap({ name: buildAuditChunkName(VICTIM, 0), namespace });
    expect(chunk.data?.["audit.jsonl"]).toContain('"call_id":"mail-2"');
    expect(chunk.immutable).not.toBe(true);

    // Once the victim made it, the attacker can neither change nor re-create it.
    const path = `/api/v1/namespaces/${namespace}/configmaps/${buildAuditChunkName(VICTIM, 0)}`;
    const refusedWith = (p: Promise<unknown>) => p.then(() => 0, (err: unknown) => (err as { code?: number }).code);
    expect(await refusedWith(attacker.request("PATCH", path, { body: { data: { "audit.jsonl": forgedLine("late") } }, contentType: "application/merge-patch+json" }))).toBe(403);
    expect(await refusedWith(attacker.request("DELETE", path))).toBe(403);
  });

  it("lets the victim write its result over a planted result ConfigMap, and shows only the result it wrote", async () => {
    await plant(`${VICTIM}-result`, { result: "forged result" }, true);
    const output = "the real answer\n".repeat(400);
    const submitted = await callTool(sc!, "submit_output", { output }, "out-1");
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ decision: "run" });
    const shown = await kubectlLeviath(["result", VICTIM, "-n", namespace]);
    expect(shown.stdout).toBe(output);
    // A namespace's ConfigMap writer who changes it afterwards gets it refused, not shown as the Run's.
    await testCluster().core.replaceNamespacedConfigMap({ name: `${VICTIM}-result`, namespace, body: { metadata: { name: `${VICTIM}-result` }, data: { result: "changed later" } } });
    const refused = await kubectlLeviath(["result", VICTIM, "-n", namespace], { allowFailure: true });
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("does not hold what the sidecar wrote");
  });
});
