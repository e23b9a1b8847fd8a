// `leviath sidecar --pool` against the real API server, as a warm pool's pod (docs/controller.md, "Warm pools"):
// with the pool pod's own identity (its Role reads its own pod, nothing else) it refuses every call until bound;
// a binding whose snapshot does not match the Run's digest leaves it refusing; once the Run's Role is bound to the
// pod's ServiceAccount and everything checks out, the cluster sidecar takes over with the Run's snapshot.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computeSnapshotDataSha256 } from "../../src/io/snapshot-digest.ts";
import { connectKube } from "../../src/kube/connect.ts";
import { isApiStatus } from "../../src/kube/errors.ts";
import { buildPath, RESOURCES } from "../../src/kube/resources.ts";
import { ANNOTATION } from "../../src/sandbox/names.ts";
import { buildPoolPod, buildPoolPodPrerequisites, buildPoolRunIdentity } from "../../src/sandbox/pool-pods.ts";
import { DEFAULT_POD_SETTINGS } from "../../src/sandbox/pod-settings.ts";
import { snapshotOf } from "../../src/sandbox/test-fixtures.ts";
import { makeTempDir } from "../cli/sidecar-harness.ts";
import { repo } from "../cli/run-cli.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "./harness/index.ts";
import { applyAsOperator, RECORDS_RUN_POLICY, writeServiceAccountKubeconfig } from "./sidecar-fixtures.ts";
import { freePorts } from "./harness/loopback.ts";

let namespace = "";
beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("sidecar-pool");
});
afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});


const apply = applyAsOperator;

describe("a pool pod's sidecar", () => {
  it("refuses every call until bound, stays unbound on a snapshot that does not match, and takes over once it does", async () => {
    const agent = { namespace, name: "notes", uid: "00000000-0000-0000-0000-000000000001" };
    const pod = buildPoolPod({ agent, image: "r:1", readPathVolumes: [] }, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    const podName = pod.metadata.name;
    const prerequisites = buildPoolPodPrerequisites(agent, "0a1b2c3d4e").filter((o) => o.kind !== "PersistentVolumeClaim");
    for (const o of [...prerequisites, pod]) o.metadata.ownerReferences = [];
    await apply([...prerequisites, pod]);
    const root = makeTempDir("leviath-pool-");
    mkdirSync(join(root, "work"));
    const kubeconfig = await writeServiceAccountKubeconfig(join(root, "pool.kubeconfig"), namespace, podName);
    const [port] = await freePorts(1);
    const env: Record<string, string | undefined> = { ...process.env, LEVIATH_POD: podName, LEVIATH_NAMESPACE: namespace, TMPDIR: root };
    delete env["KUBERNETES_SERVICE_HOST"];
    const proc = spawn(process.execPath, [repo("bin/leviath"), "sidecar", "--pool", "--workdir", join(root, "work"), "--listen", `127.0.0.1:${port}`, "--kubeconfig", kubeconfig, "--audit-dir", join(root, "audit"), "--runtime-token-file", join(root, "runtime-token")], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    try {
      await waitFor(async () => (out.includes("unbound) refusing on") ? true : undefined), { timeoutMs: 60_000, description: `the pool sidecar to listen:\n${out}\n${err}` });
      for (const [method, path] of [["POST", "/v1/tool-calls"], ["GET", "/v1/tool-calls/x"], ["GET", "/"]] as const) {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, ...(method === "POST" ? { body: "{}" } : {}) });
        expect([path, res.status, ((await res.json()) as { code: string }).code]).toEqual([path, 503, "not-bound"]);
      }

      // The Run, its snapshot, its Role bound to the pool pod's ServiceAccount, and the pod's annotations.
      const { custom, core } = testCluster();
      const run = (await custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "r1" }, spec: { agentRef: { name: "notes" } } } })) as { metadata: { uid: string } };
      const data = { "run-policy.json": JSON.stringify(RECORDS_RUN_POLICY), "runtime.json": "{}", "controller.json": "{}" };
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "r1-policy" }, data } });
      await apply(buildPoolRunIdentity({ name: "r1", namespace, uid: run.metadata.uid }, snapshotOf({ image: "r:1" }), podName, []));
      const setStatus = (sha: string) => kubectl(["patch", "run", "r1", "-n", namespace, "--subresource", "status", "--type", "merge", "-p", JSON.stringify({ status: { enginePod: podName, startedFrom: "pool", snapshotSha256: sha } })]);
      await setStatus(computeSnapshotDataSha256({ ...data, "run-policy.json": "{}" }));
      await kubectl(["annotate", "pod", podName, "-n", namespace, `${ANNOTATION.boundRun}=r1`, `${ANNOTATION.boundRunUid}=${run.metadata.uid}`]);
      await waitFor(async () => (err.includes("does not hash to the Run's status.snapshotSha256") ? true : undefined), { timeoutMs: 30_000, description: `the mismatch to be refused:\n${err}` });
      expect((await fetch(`http://127.0.0.1:${port}/v1/tool-calls/x`)).status).toBe(503);

      await setStatus(computeSnapshotDataSha256(data));
      await waitFor(async () => (/bound to Run r1[\s\S]*listening on/.test(out) ? true : undefined), { timeoutMs: 60_000, description: `the cluster sidecar to take over:\n${out}\n${err}` });
      // Now the Run's sidecar answers: a call without the runtime token is refused by it (401), no longer 503.
      const after = await waitFor(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/tool-calls/x`).catch(() => undefined);
        return res?.status === 401 ? res : undefined;
      }, { timeoutMs: 30_000, description: "the bound sidecar to answer" });
      expect(after.status).toBe(401);
    } finally {
      proc.kill("SIGTERM");
      await exited;
    }
  });

  it("may watch its own pod by name and nothing broader: no list, no watch of the namespace's pods or of another pod", async () => {
    const agent = { namespace, name: "notes", uid: "00000000-0000-0000-0000-000000000001" };
    const [pod, other] = ["1a1b2c3d4e", "2a1b2c3d4e"].map((id) => buildPoolPod({ agent, image: "r:1", readPathVolumes: [] }, id, DEFAULT_POD_SETTINGS));
    const prerequisites = ["1a1b2c3d4e", "2a1b2c3d4e"].flatMap((id) => buildPoolPodPrerequisites(agent, id)).filter((o) => o.kind !== "PersistentVolumeClaim");
    for (const o of [...prerequisites, pod!, other!]) o.metadata.ownerReferences = [];
    await apply([...prerequisites, pod!, other!]);
    const root = makeTempDir("leviath-pool-rbac-");
    const client = await connectKube(await writeServiceAccountKubeconfig(join(root, "pool.kubeconfig"), namespace, pod!.metadata.name), {});
    const pods = buildPath(RESOURCES.pod, namespace);
    /** The first event of a watch of the namespace's pods with `query`, or the API's refusal. */
    const watchOnce = async (query: Record<string, string>): Promise<string | number> => {
      const stop = new AbortController();
      let first: string | undefined;
      try {
        await client.watch(pods, { ...query, timeoutSeconds: 5 }, (type, object) => {
          first = `${type} ${(object as { metadata?: { name?: string } }).metadata?.name}`;
          stop.abort();
        }, stop.signal);
      } catch (err) {
        if (first === undefined) return isApiStatus(err, 403) ? 403 : String(err);
      }
      return first ?? "ended";
    };
    // Without a resourceVersion, the watch's first event is the pod as it is: what the pool sidecar checks first.
    expect(await watchOnce({ fieldSelector: `metadata.name=${pod!.metadata.name}` })).toBe(`ADDED ${pod!.metadata.name}`);
    expect(await watchOnce({})).toBe(403);
    expect(await watchOnce({ fieldSelector: `metadata.name=${other!.metadata.name}` })).toBe(403);
    expect(await watchOnce({ labelSelector: "app=x" })).toBe(403);
    const list = (query: Record<string, string>) => client.request("GET", pods, { query }).then(() => 200, (err: unknown) => (isApiStatus(err, 403) ? 403 : String(err)));
    expect(await list({})).toBe(403);
    expect(await list({ fieldSelector: `metadata.name=${pod!.metadata.name}` })).toBe(403);
    expect(await client.request("GET", buildPath(RESOURCES.pod, namespace, other!.metadata.name)).then(() => 200, (err: unknown) => (isApiStatus(err, 403) ? 403 : String(err)))).toBe(403);
  });
});
