// A sidecar that dies (SIGKILL: an OOM kill or a crash) and starts again, as a real process against the real API
// server and under exactly the per-Run Role the controller builds: an accepted submit_output is in the Run's status
// the moment the runtime hears `run` (inline or, larger, in `<run>-result`), a restarted sidecar serves it and never
// writes a status without it, and the audit ConfigMaps continue the sequence: every record stored before a kill is
// still there, in order, and the records of the next start follow (no start writes `<run>-audit-000` from empty).
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, get, makeTempDir, post, startSidecar, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "./harness/index.ts";
import { createRunWithSidecarIdentity, RECORDS_RUN_POLICY } from "./sidecar-fixtures.ts";

const RUN = "restart-run";
let namespace = "";
let args: string[] = [];
let sc: SidecarProcess | undefined;

type RunStatus = { result?: Record<string, unknown>; gateDecisions?: Record<string, number>; runtimeWarnings?: string[] };
const WARNINGS = ["stages[0].runtime.hooks: ignored by leviath agent", "stages[0].runtime.model.parameters.seed: not passed on"];
const readStatus = async () => ((await testCluster().custom.getNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "runs", name: RUN })) as { status?: RunStatus }).status ?? {};
const sidecarStatus = async (s: SidecarProcess) => (await get<RunStatus>(`${s.url}/v1/status`)).body;

/** Every audit line in the Run's audit ConfigMaps, in order (the command docs/operations.md gives). */
async function storedAudit(): Promise<string[]> {
  const text = (await kubectl(["get", "configmap", "-n", namespace, "-l", `leviath.dev/run=${RUN},leviath.dev/component=audit`,
    "-o", "jsonpath={range .items[*]}{.data.audit\\.jsonl}{end}"])).stdout;
  return text.split("\n").filter((l) => l.startsWith("{"));
}
const callIds = (lines: readonly string[]) => lines.map((l) => (JSON.parse(l) as { leviath_audit: { record: { call_id: string } } }).leviath_audit.record.call_id);

/** Waits until the audit ConfigMaps hold the record of every call in `ids`; returns what they hold then. */
function waitForStored(ids: readonly string[]): Promise<string[]> {
  return waitFor(async () => {
    const lines = await storedAudit();
    return ids.every((id) => callIds(lines).includes(id)) ? lines : undefined;
  }, { description: `the audit records of ${ids.join(", ")} in the audit ConfigMaps` });
}

async function kill(s: SidecarProcess): Promise<void> {
  expect(await s.stop("SIGKILL")).toBe("SIGKILL");
}

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("restart");
  const root = makeTempDir("leviath-sidecar-restart-");
  const kubeconfig = await createRunWithSidecarIdentity(namespace, RUN, root);
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(RECORDS_RUN_POLICY));
  // The same audit directory each start, as the sidecar container's volume is kept across a container restart.
  args = ["--run-policy", join(root, "run-policy.json"), "--run", RUN, "--namespace", namespace, "--kubeconfig", kubeconfig, "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")];
}, 120_000);

afterAll(async () => {
  if (sc && sc.proc.exitCode === null && sc.proc.signalCode === null) await sc.stop();
  if (namespace) await deleteNamespace(namespace);
});

describe("a sidecar killed and started again keeps the Run's records", () => {
  let killedFirst: string[] = [];
  let killedSecond: string[] = [];
  const big = "x".repeat(10_000);

  it("has a small accepted result in the Run's status when the runtime hears run, and keeps it through a SIGKILL", async () => {
    sc = await startSidecar(args);
    expect((await callTool(sc, "send_email", { to: "a@example.com" }, "mail-1")).body).toMatchObject({ decision: "deny" });
    expect((await callTool(sc, "submit_output", { output: "first answer\n" }, "out-1")).body).toMatchObject({ decision: "run" });
    // Read once, at once: stored before the answer, not by a later status write.
    expect((await readStatus()).result).toMatchObject({ inline: "first answer\n", callId: "out-1" });
    killedFirst = await waitForStored(["mail-1", "out-1"]);
    // What the runtime said it does not honour reaches the Run's status while the run goes on.
    expect((await post(`${sc.url}/v1/warnings`, { warnings: WARNINGS })).body).toEqual({ added: 2, kept: 2, omitted: 0 });
    await waitFor(async () => (JSON.stringify((await readStatus()).runtimeWarnings) === JSON.stringify(WARNINGS) ? true : undefined), { description: "the runtime's warnings in the Run's status" });
    await kill(sc);
    expect((await readStatus()).result).toMatchObject({ inline: "first answer\n", callId: "out-1" });
  });

  it("starts again serving that result, and its status writes keep it", async () => {
    sc = await startSidecar(args);
    expect((await sidecarStatus(sc)).result).toMatchObject({ inline: "first answer\n", callId: "out-1" });
    for (const id of ["mail-2", "mail-3", "mail-4"]) expect((await callTool(sc, "send_email", { to: "b@example.com" }, id)).body).toMatchObject({ decision: "deny" });
    const counts = (await sidecarStatus(sc)).gateDecisions;
    // This start's own counts, so the Run's status shows them only once this start wrote it.
    await waitFor(async () => (JSON.stringify((await readStatus()).gateDecisions) === JSON.stringify(counts) ? true : undefined), { description: "the restarted sidecar's status write" });
    expect((await readStatus()).result).toMatchObject({ inline: "first answer\n", callId: "out-1" });
    // The runtime said them once, to the first start: this start kept them, in its answers and its status writes.
    expect((await sidecarStatus(sc)).runtimeWarnings).toEqual(WARNINGS);
    expect((await readStatus()).runtimeWarnings).toEqual(WARNINGS);
  });

  it("has a larger accepted result in the result ConfigMap and the status when the runtime hears run", async () => {
    expect((await callTool(sc!, "submit_output", { output: big }, "out-2")).body).toMatchObject({ decision: "run" });
    const sha256 = createHash("sha256").update(big).digest("hex");
    expect((await readStatus()).result).toMatchObject({ configMapName: `${RUN}-result`, bytes: big.length, sha256, callId: "out-2" });
    expect((await testCluster().core.readNamespacedConfigMap({ name: `${RUN}-result`, namespace })).data?.["result"]).toBe(big);
    killedSecond = await waitForStored(["mail-2", "mail-3", "mail-4", "out-2"]);
    await kill(sc!);
    sc = await startSidecar(args);
    expect((await sidecarStatus(sc)).result).toMatchObject({ configMapName: `${RUN}-result`, callId: "out-2" });
  });

  it("continues the audit sequence: every record stored before each kill is still there, in order, then the new ones", async () => {
    expect((await callTool(sc!, "send_email", { to: "c@example.com" }, "mail-5")).body).toMatchObject({ decision: "deny" });
    expect(await sc!.stop()).toBe(0);
    const stored = await storedAudit();
    expect(stored.slice(0, killedFirst.length)).toEqual(killedFirst);
    expect(stored.slice(0, killedSecond.length)).toEqual(killedSecond);
    expect(callIds(stored)).toEqual(["mail-1", "out-1", "mail-2", "mail-3", "mail-4", "out-2", "mail-5"]);
    expect((await readStatus()).result).toMatchObject({ configMapName: `${RUN}-result`, callId: "out-2" });
  });
});
