// `leviath bound-exec` in a warm pool's pod, against a real `leviath sidecar --pool` that talks to the real API server
// as the pool pod's own ServiceAccount (docs/controller.md, "Late binding, in the pod"). The runtime wrapper waits
// while the sidecar is unbound, gets the Run's runtime.json and credentials once the pod is bound (the Secrets read
// by the sidecar with the Run's Role), writes them where a cold engine pod has them, starts a small program that
// prints what it received, passes a signal on and its exit status back. The refusals: the binding's ask without the
// runtime token, before binding (held until the binding, whose hand-out the held ask gets), a second time (recorded in
// the audit), and a credential Secret the Role cannot read.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LABEL } from "../../src/api/constants.ts";
import { computeSnapshotDataSha256 } from "../../src/io/snapshot-digest.ts";
import { ANNOTATION } from "../../src/sandbox/names.ts";
import { DEFAULT_POD_SETTINGS } from "../../src/sandbox/pod-settings.ts";
import { buildPoolPod, buildPoolPodPrerequisites, buildPoolRunIdentity } from "../../src/sandbox/pool-pods.ts";
import { buildSnapshotData, type RunSnapshot } from "../../src/sandbox/run-snapshot.ts";
import { snapshotOf } from "../../src/sandbox/test-fixtures.ts";
import { makeTempDir } from "../cli/sidecar-harness.ts";
import { repo } from "../cli/run-cli.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "./harness/index.ts";
import { applyAsOperator, readDecisionRecords, RECORDS_RUN_POLICY, writeServiceAccountKubeconfig } from "./sidecar-fixtures.ts";
import { freePorts } from "./harness/loopback.ts";

let namespace = "";
beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("bound-exec");
  const { core } = testCluster();
  const secret = (name: string, data: Record<string, string>) => core.createNamespacedSecret({ namespace, body: { metadata: { name, labels: { [LABEL.credential]: "true" } }, stringData: data } });
  await secret("model-key", { ANTHROPIC_API_KEY: "sk-ant-bound", HOME: "/not/the/pods/home" });
  await secret("extra-env", { ANTHROPIC_API_KEY: "sk-ant-later-wins", REGION: "eu-1" });
  await secret("tls", { "tls.crt": "-----CERT-----\n", "ca.pem": "-----CA-----\n" });
});
afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});


const apply = applyAsOperator;

/** A process of ours, its output collected. */
interface Proc {
  readonly child: ChildProcess;
  out: string;
  err: string;
  readonly exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string | undefined>): Proc {
  const child = spawn(process.execPath, [repo("bin/leviath"), ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  const p: Proc = { child, out: "", err: "", exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))) };
  child.stdout!.on("data", (d: Buffer) => (p.out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (p.err += d.toString()));
  return p;
}

/** The program bound-exec starts: prints what it received, then waits for SIGTERM and exits 42 on it. */
const PROBE = `
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
const [dir, started] = process.argv.slice(2);
writeFileSync(started, "");
const env = Object.fromEntries(["ANTHROPIC_API_KEY", "REGION", "HOME", "LEVIATH_RUN", "LEVIATH_RUNTIME_CONFIG", "LEVIATH_NAMESPACE"].map((k) => [k, process.env[k]]));
const tls = join(dir, "tls");
const files = Object.fromEntries(readdirSync(tls).sort().map((f) => [f, { text: readFileSync(join(tls, f), "utf8"), mode: (statSync(join(tls, f)).mode & 0o777).toString(8) }]));
process.on("SIGTERM", () => { console.log("PROBE got SIGTERM"); process.exit(42); });
console.log("PROBE " + JSON.stringify({ env, runtime: readFileSync(process.env.LEVIATH_RUNTIME_CONFIG, "utf8"), files, others: readdirSync(dir).sort() }));
setInterval(() => {}, 1000);
`;

/** A pool pod (its identity and pod applied, no controller), its sidecar in --pool mode as the pod's ServiceAccount. */
async function startPoolPod(id: string) {
  const agent = { namespace, name: "notes", uid: "00000000-0000-0000-0000-000000000001" };
  const pod = buildPoolPod({ agent, image: "r:1", readPathVolumes: [] }, id, DEFAULT_POD_SETTINGS);
  const prerequisites = buildPoolPodPrerequisites(agent, id).filter((o) => o.kind !== "PersistentVolumeClaim");
  for (const o of [...prerequisites, pod]) o.metadata.ownerReferences = [];
  await apply([...prerequisites, pod]);
  const root = makeTempDir("leviath-bound-exec-");
  for (const d of ["work", "home", "agent"]) mkdirSync(join(root, d));
  writeFileSync(join(root, "probe.mjs"), PROBE);
  const podName = pod.metadata.name;
  const kubeconfig = await writeServiceAccountKubeconfig(join(root, "pool.kubeconfig"), namespace, podName);
  const [port] = await freePorts(1);
  const env: Record<string, string | undefined> = { ...process.env, LEVIATH_POD: podName, LEVIATH_NAMESPACE: namespace, TMPDIR: root };
  delete env["KUBERNETES_SERVICE_HOST"];
  const tokenFile = join(root, "runtime-token");
  const sidecar = start(["sidecar", "--pool", "--workdir", join(root, "work"), "--listen", `127.0.0.1:${port}`, "--kubeconfig", kubeconfig, "--audit-dir", join(root, "audit"), "--runtime-token-file", tokenFile], env);
  await waitFor(async () => (sidecar.out.includes("unbound) refusing on") ? true : undefined), { timeoutMs: 60_000, description: `the pool sidecar to listen:\n${sidecar.out}\n${sidecar.err}` });
  const url = `http://127.0.0.1:${port}`;
  const runtimeEnv = { ...process.env, HOME: join(root, "home"), LEVIATH_NAMESPACE: namespace, LEVIATH_SIDECAR_URL: url, LEVIATH_SIDECAR_TOKEN_FILE: tokenFile };
  const heldRuntime = () => start(["bound-exec", "--held", "--termination-log", join(root, "termination"), "--runtime-config", join(root, "agent", "runtime", "runtime.json"), "--credentials-dir", join(root, "agent", "credentials"), "--", process.execPath, repo("images/runtime/runtime.mjs")], runtimeEnv);
  const boundExec = () => start(["bound-exec", "--termination-log", join(root, "termination"), "--runtime-config", join(root, "agent", "runtime", "runtime.json"), "--credentials-dir", join(root, "agent", "credentials"), "--", process.execPath, join(root, "probe.mjs"), join(root, "agent", "credentials"), join(root, "started")], runtimeEnv);
  return { podName, root, url, tokenFile, sidecar, boundExec, heldRuntime };
}

/** Binds the pool pod to a new Run `run` of `snapshot` as the controller does (Run, snapshot, identity, status, annotations). */
async function bind(podName: string, run: string, snapshot: RunSnapshot, identityFrom: RunSnapshot = snapshot): Promise<Record<string, string>> {
  const { custom, core } = testCluster();
  const created = (await custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: run }, spec: { agentRef: { name: "notes" }, task: "review" } } })) as { metadata: { uid: string } };
  const data = { ...buildSnapshotData(snapshot), "run-policy.json": JSON.stringify(RECORDS_RUN_POLICY) };
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `${run}-policy` }, data } });
  await apply(buildPoolRunIdentity({ name: run, namespace, uid: created.metadata.uid }, identityFrom, podName, []));
  await kubectl(["patch", "run", run, "-n", namespace, "--subresource", "status", "--type", "merge", "-p", JSON.stringify({ status: { enginePod: podName, startedFrom: "pool", snapshotSha256: computeSnapshotDataSha256(data) } })]);
  await kubectl(["annotate", "--overwrite", "pod", podName, "-n", namespace, `${ANNOTATION.boundRun}=${run}`, `${ANNOTATION.boundRunUid}=${created.metadata.uid}`]);
  return data;
}

const askBinding = async (url: string, token?: string, signal?: AbortSignal) => {
  const res = await fetch(`${url}/v1/binding`, { method: "POST", headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, ...(signal ? { signal } : {}) });
  return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
};

const CREDENTIALS = [{ secretName: "model-key" }, { secretName: "tls", as: "files" as const }, { secretName: "extra-env" }];

describe("leviath bound-exec in a pool pod", () => {
  it("waits unbound, gets the Run's runtime.json and credentials once, starts the command with them, and passes a signal and its exit status", async () => {
    const pool = await startPoolPod("1a1b2c3d4e");
    const runtime = pool.boundExec();
    try {
      const token = readFileSync(pool.tokenFile, "utf8").trim();
      // Before binding: the ask without the token is refused at once, as the bound sidecar refuses it; with it, it is
      // held until the sidecar is bound (then the ask held longest is handed the binding); this one is given up.
      expect(await askBinding(pool.url)).toMatchObject({ status: 401, body: { code: "runtime-token-required" } });
      let settled = false;
      const giveUp = new AbortController();
      const held = askBinding(pool.url, token, giveUp.signal).finally(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(settled).toBe(false);
      giveUp.abort();
      await expect(held).rejects.toThrow();
      expect(existsSync(join(pool.root, "started"))).toBe(false);

      // bound-exec's held ask is handed the binding by the unbound server, before the Run's sidecar listens.
      const snapshot = snapshotOf({ image: "r:1", credentials: CREDENTIALS }, undefined, { task: "review the notes" });
      const data = await bind(pool.podName, "r1", snapshot);
      const line = await waitFor(async () => /^PROBE (\{.*\})$/m.exec(runtime.out)?.[1], { timeoutMs: 90_000, description: `the command to start:\n${runtime.out}\n${runtime.err}\n${pool.sidecar.err}` });
      const seen = JSON.parse(line) as { env: Record<string, string | undefined>; runtime: string; files: Record<string, { text: string; mode: string }>; others: string[] };
      expect(seen.runtime).toBe(data["runtime.json"]);
      expect(seen.env).toEqual({
        ANTHROPIC_API_KEY: "sk-ant-later-wins", REGION: "eu-1", HOME: join(pool.root, "home"), LEVIATH_RUN: "r1",
        LEVIATH_RUNTIME_CONFIG: join(pool.root, "agent", "runtime", "runtime.json"), LEVIATH_NAMESPACE: namespace,
      });
      expect(seen.files).toEqual({ "ca.pem": { text: "-----CA-----\n", mode: "400" }, "tls.crt": { text: "-----CERT-----\n", mode: "400" } });
      // Only `files` credentials become files: the env ones are nowhere on disk.
      expect(seen.others).toEqual(["tls"]);
      expect(runtime.err).toContain("bound to Run r1");

      // A second ask, with the token, is refused and recorded; one without it still 401.
      expect(await askBinding(pool.url, token)).toMatchObject({ status: 409, body: { code: "binding-given" } });
      expect(await askBinding(pool.url, "not-the-token")).toMatchObject({ status: 401, body: { code: "runtime-token-required" } });
      const records = await waitFor(async () => {
        const found = readDecisionRecords(join(pool.root, "audit")).filter((r) => r["tool_name"] === "binding");
        return found.length === 2 ? found : undefined;
      }, { timeoutMs: 30_000, description: "the two binding records" });
      expect(records.map((r) => [r["decision"], r["decision_source"], r["code"]])).toEqual([["allow", "pool_binding", undefined], ["deny", "pool_binding", "binding-given"]]);
      expect(JSON.stringify(records)).not.toContain("sk-ant");

      runtime.child.kill("SIGTERM");
      expect(await runtime.exited).toBe(42);
      expect(runtime.out).toContain("PROBE got SIGTERM");
    } finally {
      runtime.child.kill("SIGKILL");
      pool.sidecar.child.kill("SIGTERM");
      await pool.sidecar.exited;
    }
  });

  it("starts nothing when a credential Secret the Run's snapshot names is one its Role cannot read", async () => {
    const pool = await startPoolPod("2a1b2c3d4e");
    const runtime = pool.boundExec();
    try {
      const snapshot = snapshotOf({ image: "r:1", credentials: [{ secretName: "model-key" }, { secretName: "tls", as: "files" }] });
      // The Role names model-key only: tls, which the snapshot pins, stays unreadable to this pod.
      await bind(pool.podName, "r2", snapshot, snapshotOf({ image: "r:1", credentials: [{ secretName: "model-key" }] }));
      expect(await runtime.exited).toBe(1);
      expect(runtime.err).toMatch(/the sidecar refused the binding \(503 binding-unavailable\): the binding cannot be handed out: the credential Secret 'tls' cannot be read with the Run's Role/);
      expect(existsSync(join(pool.root, "started"))).toBe(false);
      expect(existsSync(join(pool.root, "agent", "runtime", "runtime.json"))).toBe(false);
      expect(readFileSync(join(pool.root, "termination"), "utf8")).toContain("the credential Secret 'tls' cannot be read with the Run's Role");
      const records = readDecisionRecords(join(pool.root, "audit")).filter((r) => r["tool_name"] === "binding");
      expect(records.map((r) => [r["decision"], r["code"]])).toEqual([["deny", "binding-unavailable"]]);
    } finally {
      runtime.child.kill("SIGKILL");
      pool.sidecar.child.kill("SIGTERM");
      await pool.sidecar.exited;
    }
  });

  it("--held: the scripted runtime, up before any Run, is handed an attacker's binding and gets nothing, then gets its own Run", async () => {
    const pool = await startPoolPod("3a1b2c3d4e");
    const runtime = pool.heldRuntime();
    const lines = () => runtime.out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { step: string; status: number; body: Record<string, unknown> });
    try {
      const held = await waitFor(async () => lines().find((l) => l.step === "held"), { timeoutMs: 60_000, description: `the runtime to be up and held:\n${runtime.out}\n${runtime.err}` });
      expect(held.body["run"]).toBeNull();

      // Someone who may patch pods points the pod at a Run of theirs: its status does not name this pod, and this pod's
      // account may not even read it. The sidecar refuses; the held runtime gets nothing, and nothing is on disk.
      const { custom } = testCluster();
      const evil = (await custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "evil" }, spec: { agentRef: { name: "notes" } } } })) as { metadata: { uid: string } };
      await kubectl(["annotate", "pod", pool.podName, "-n", namespace, `${ANNOTATION.boundRun}=evil`, `${ANNOTATION.boundRunUid}=${evil.metadata.uid}`]);
      await waitFor(async () => (pool.sidecar.err.includes("binding refused, staying unbound: the Run 'evil' cannot be read") ? true : undefined), { timeoutMs: 30_000, description: `the attacker's binding to be refused:\n${pool.sidecar.err}` });
      expect(lines().map((l) => l.step)).toEqual(["held"]);
      expect(existsSync(join(pool.root, "agent", "runtime", "runtime.json"))).toBe(false);

      // The controller's binding: the same process, now with its Run and nothing else.
      const snapshot = snapshotOf({ image: "r:1", credentials: [{ secretName: "model-key" }] }, undefined, { task: "held", runtime: { e2e: { scenario: "exit", exitCode: 0 } } });
      await bind(pool.podName, "r3", snapshot);
      expect(await runtime.exited).toBe(0);
      const bound = lines().find((l) => l.step === "binding");
      expect(bound?.body).toMatchObject({ run: "r3", env: "r3", startedAt: held.body["startedAt"] });
      expect(Number(bound?.body["boundAt"])).toBeGreaterThanOrEqual(Number(held.body["startedAt"]));
      expect(lines().find((l) => l.step === "config")?.body).toMatchObject({ task: "held", scenario: "exit" });
      expect(runtime.err).toContain("bound to Run r3; handing it to");
    } finally {
      runtime.child.kill("SIGKILL");
      pool.sidecar.child.kill("SIGTERM");
      await pool.sidecar.exited;
    }
  });
});
