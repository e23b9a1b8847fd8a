// Forging or blocking a Run's audit and result, against the real API server: another Run's sidecar (whose Role may
// create ConfigMaps of any name) creates a victim's `<run>-audit-NNN` and `<run>-result` before the victim's sidecar
// writes them, the Run's uid as owner and all. A forged chunk (an approval nobody gave) must be neither continued
// nor listed by `kubectl leviath audit`; full, immutable chunks at `-000` (held by a finalizer) and `-031` and an
// immutable `-result` must not stop the victim: its calls are answered and audited, a restart continues its own
// chunk, `kubectl leviath result` prints its output. Each victim's sidecar runs as its own ServiceAccount, under the
// Role the controller builds. Every one of these failed before `status.audit` (b98374a).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeClient } from "../../src/kube/client.ts";
import { createKubeClient, loadKubeConfig } from "../../src/kube/client.ts";
import { AUDIT_CHUNK_BYTES, buildAuditChunkName } from "../../src/sandbox/names.ts";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectlLeviath, testCluster, waitFor } from "./harness/index.ts";
import { createRunWithSidecarIdentity, RECORDS_RUN_POLICY } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const FORGED = "forged-victim";
const VICTIM = "audit-victim";
const ATTACKER = "audit-attacker";
let namespace = "";
let root = "";
let sc: SidecarProcess | undefined;
let attacker: KubeClient;
const victims: Record<string, { uid: string; args: string[] }> = {};

/** An audit line as the sidecar writes it, recording an approval nobody gave. */
const forgedLine = (run: string, callId: string) => `${JSON.stringify({ leviath_audit: { run, file: "stages/0/decisions.jsonl", record: { timestamp: 1, agent_id: "agent", call_id: callId, tool_name: "shell", stage: "main", decision: "allow", decision_source: "user_allow_once", approved_by: "security-officer" } } })}\n`;
/** A chunk exactly as full as a chunk may be (768 KiB) of forged lines, the last one padded. */
function fullChunk(run: string, callId: string): string {
  const line = forgedLine(run, callId);
  const lines = line.repeat(Math.floor(AUDIT_CHUNK_BYTES / line.length) - 1);
  const room = AUDIT_CHUNK_BYTES - lines.length - `${JSON.stringify({ pad: "" })}\n`.length;
  return `${lines}${JSON.stringify({ pad: "x".repeat(room) })}\n`;
}

/** Creates `name` as the attacker Run's sidecar, owned by Run `run` and labelled as the sidecar labels its own. */
async function plant(run: string, name: string, data: Record<string, string>, opts: { immutable?: boolean; finalizers?: string[] } = {}): Promise<void> {
  const ownerReferences = [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: run, uid: victims[run]!.uid, controller: false }];
  const labels = { "leviath.dev/run": run, "leviath.dev/component": name.endsWith("-result") ? "result" : "audit", "app.kubernetes.io/managed-by": "leviath-sidecar" };
  const metadata = { name, labels, ownerReferences, finalizers: opts.finalizers ?? [] };
  await attacker.request("POST", `/api/v1/namespaces/${namespace}/configmaps`, { body: { apiVersion: "v1", kind: "ConfigMap", metadata, immutable: opts.immutable ?? false, data } });
}

type AuditLine = { leviath_audit: { record: { call_id: string; approved_by?: string } } };
/** `kubectl leviath audit RUN -o json`: the call ids and approvers it lists, and its stderr. */
async function auditJson(run: string) {
  const r = await kubectlLeviath(["audit", run, "-o", "json", "-n", namespace], { allowFailure: true });
  const lines = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as AuditLine);
  return { code: r.exitCode, ids: lines.map((l) => l.leviath_audit.record.call_id), approvedBy: lines.flatMap((l) => l.leviath_audit.record.approved_by ?? []), stderr: r.stderr };
}
/** Waits until `kubectl leviath audit RUN` lists call `id`. */
const waitForListed = (run: string, id: string) => waitFor(async () => {
  const a = await auditJson(run);
  return a.ids.includes(id) ? a : undefined;
}, { description: `call ${id} in kubectl leviath audit ${run}` });

/** Creates Run `run` and its sidecar identity; its sidecar's arguments, with a workdir holding notes.md. */
async function createVictim(run: string): Promise<void> {
  const dir = join(root, run);
  mkdirSync(join(dir, "work"), { recursive: true });
  const kubeconfig = await createRunWithSidecarIdentity(namespace, run, dir);
  const created = (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: run })) as { metadata: { uid: string } };
  writeFileSync(join(dir, "work", "notes.md"), "notes\n");
  writeFileSync(join(dir, "run-policy.json"), JSON.stringify(RECORDS_RUN_POLICY));
  victims[run] = { uid: created.metadata.uid, args: ["--run-policy", join(dir, "run-policy.json"), "--run", run, "--namespace", namespace, "--kubeconfig", kubeconfig, "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit")] };
}

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("auditforge");
  root = makeTempDir("leviath-sidecar-audit-forgery-");
  await createVictim(FORGED);
  await createVictim(VICTIM);
  attacker = createKubeClient(loadKubeConfig(await createRunWithSidecarIdentity(namespace, ATTACKER, root)));
}, 120_000);

afterAll(async () => {
  if (sc && sc.proc.exitCode === null && sc.proc.signalCode === null) await sc.stop();
  if (namespace) await deleteNamespace(namespace);
});

describe("an audit chunk forged by another Run's sidecar", () => {
  it("is neither continued nor listed as the Run's", async () => {
    await plant(FORGED, buildAuditChunkName(FORGED, 0), { "audit.jsonl": forgedLine(FORGED, "forged-0") });
    await plant(FORGED, buildAuditChunkName(FORGED, 2), { "audit.jsonl": forgedLine(FORGED, "forged-2") });
    sc = await startSidecar(victims[FORGED]!.args);
    expect(await callTool(sc, "read_file", { path: "notes.md" }, "read-1")).toMatchObject({ status: 200, body: { decision: "allow" } });
    const listed = await waitForListed(FORGED, "read-1");
    expect(listed.ids).toEqual(["read-1"]);
    expect(listed.approvedBy).toEqual([]);
    expect(listed.stderr).toContain(`'${buildAuditChunkName(FORGED, 2)}' was not written by the Run's sidecar`);
    // The sidecar's own -000 took the forged one's place, whole.
    const own = await testCluster().core.readNamespacedConfigMap({ name: buildAuditChunkName(FORGED, 0), namespace });
    expect(own.data?.["audit.jsonl"]).not.toContain("forged-0");
    expect(await sc.stop()).toBe(0);
    sc = undefined;
  });
});

describe("full or immutable audit and result ConfigMaps planted by another Run's sidecar", () => {
  it("neither block the victim's calls nor pass for its audit, through a restart", async () => {
    // Immutable and held by a finalizer: only deleting it, finalizer cleared, makes room for the victim's own.
    await plant(VICTIM, buildAuditChunkName(VICTIM, 0), { "audit.jsonl": fullChunk(VICTIM, "forged-0") }, { immutable: true, finalizers: ["example.com/hold"] });
    await plant(VICTIM, buildAuditChunkName(VICTIM, 1), { "audit.jsonl": forgedLine(VICTIM, "forged-1") });
    await plant(VICTIM, buildAuditChunkName(VICTIM, 31), { "audit.jsonl": fullChunk(VICTIM, "forged-31") }, { immutable: true });
    expect(Buffer.byteLength(fullChunk(VICTIM, "forged-31"))).toBe(AUDIT_CHUNK_BYTES);

    sc = await startSidecar(victims[VICTIM]!.args);
    // Allowed, run and recorded: not refused `audit-failed` (503) for want of room after the planted chunk.
    const first = await callTool(sc, "read_file", { path: "notes.md" }, "read-1");
    expect(first).toMatchObject({ status: 200, body: { decision: "allow", result: "notes\n" } });
    const listed = await waitForListed(VICTIM, "read-1");
    expect(listed.code).toBe(0);
    expect(listed.ids).toEqual(["read-1"]);
    expect(listed.approvedBy).toEqual([]);
    // Its own chunk took the planted -000's place; the others are named, never shown.
    expect(listed.stderr).toContain(`'${buildAuditChunkName(VICTIM, 1)}' was not written by the Run's sidecar`);
    expect(listed.stderr).toContain(`'${buildAuditChunkName(VICTIM, 31)}' was not written by the Run's sidecar`);
    expect(listed.stderr).not.toContain(`'${buildAuditChunkName(VICTIM, 0)}'`);

    // Killed and started again: it continues its own chunk, not after the planted last one.
    expect(await sc.stop("SIGKILL")).toBe("SIGKILL");
    sc = await startSidecar(victims[VICTIM]!.args);
    const second = await callTool(sc, "read_file", { path: "notes.md" }, "read-2");
    expect(second).toMatchObject({ status: 200, body: { decision: "allow", result: "notes\n" } });
    const after = await waitForListed(VICTIM, "read-2");
    expect(after.ids).toEqual(["read-1", "read-2"]);
    const chunk = await testCluster().core.readNamespacedConfigMap({ name: buildAuditChunkName(VICTIM, 0), namespace });
    expect(chunk.data?.["audit.jsonl"]).toContain('"call_id":"read-2"');
    expect(chunk.immutable).not.toBe(true);

    // Once the victim made it, the attacker can neither change nor re-create it.
    const path = `/api/v1/namespaces/${namespace}/configmaps/${buildAuditChunkName(VICTIM, 0)}`;
    const refusedWith = (p: Promise<unknown>) => p.then(() => 0, (err: unknown) => (err as { code?: number }).code);
    expect(await refusedWith(attacker.request("PATCH", path, { body: { data: { "audit.jsonl": forgedLine(VICTIM, "late") } }, contentType: "application/merge-patch+json" }))).toBe(403);
    expect(await refusedWith(attacker.request("DELETE", path))).toBe(403);
  });

  it("lets the victim write its result over a planted result ConfigMap, and shows only the result it wrote", async () => {
    await plant(VICTIM, `${VICTIM}-result`, { result: "forged result" }, { immutable: true });
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
