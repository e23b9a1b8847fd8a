// The in-cluster sidecar loads no @kubernetes/client-node module (about 55 MiB resident with its generated model) for
// a kubeconfig of client certificates or a token, nor for the in-cluster account: a module hook preloaded into the
// real process lists every module it loads while it works against the real API server (its approval watch, its Run
// status, the audit ConfigMaps, a shell call that goes to pods/exec and waits for the sandbox container).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAuditChunkName } from "../../src/sandbox/names.ts";
import { callTool, makeTempDir, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { writeModuleHook } from "../fixtures/module-hook.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "./harness/index.ts";
import { startClusterSidecar } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const RUN = "modules-run";
let namespace = "";
let sc: SidecarProcess;
let loaded: () => string[];

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("sidecar-modules");
  const { custom, kubeconfigPath } = testCluster();
  await custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN }, spec: { agentRef: { name: "agent" } } } });
  const root = makeTempDir("leviath-sidecar-modules-");
  const modules = writeModuleHook(root);
  loaded = modules.loaded;
  ({ sc } = await startClusterSidecar(root, RUN, namespace, kubeconfigPath, ["--exec-wait-seconds", "1"], { NODE_OPTIONS: modules.nodeOptions }));
}, 120_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
  if (namespace) await deleteNamespace(namespace);
});

describe("leviath sidecar in a cluster: what it loads", () => {
  it("watches, reports, records and execs without loading @kubernetes/client-node", async () => {
    // A clean context: the gate lets shell run, so it goes to pods/exec, which first waits for the sandbox pod.
    const shell = await callTool(sc, "shell", { command: "id" });
    expect(shell.status).toBe(200);
    expect(shell.body).toMatchObject({ decision: "allow", isError: true });
    expect(String(shell.body["result"])).toMatch(/pods\/exec into pod\/modules-run-sbx-[0-9a-f]{16} failed: container 'sandbox' of pod '[^']+' is not running after 1 s \(the pod does not exist yet\)/);
    expect((await callTool(sc, "read_file", { path: "notes.md" })).body).toMatchObject({ decision: "allow", label: "internal" });

    // The Run's status and the audit ConfigMap went out over the same client.
    const { custom, core } = testCluster();
    await waitFor(async () => {
      const run = (await custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: { gateDecisions?: Record<string, number> } };
      return (run.status?.gateDecisions?.["auto_allow"] ?? 0) >= 1 ? run : undefined;
    }, { description: "the sidecar's decision counts in the Run's status" });
    await waitFor(async () => (await core.readNamespacedConfigMap({ namespace, name: buildAuditChunkName(RUN, 0) }).catch(() => undefined))?.data, { description: "the first audit ConfigMap" });

    const urls = loaded();
    // The hook saw the cluster parts, so the absence below means something.
    for (const part of ["/src/kube/https-client.ts", "/src/kube/exec-channel.ts", "/src/kube/informer.ts", "/src/sidecar/cluster/run-status-reporter.ts", "/node_modules/ws/"]) {
      expect(urls.some((u) => u.includes(part)), part).toBe(true);
    }
    expect(urls.filter((u) => u.includes("@kubernetes/client-node"))).toEqual([]);
  });
});
