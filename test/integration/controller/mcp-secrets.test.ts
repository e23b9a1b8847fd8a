// The Secrets behind the admin's MCP servers' headers, against the real API server: only a Secret of the Run's
// namespace that its owner opted in for that very server (`leviath.dev/mcp-server: <server>`) and that is not
// also a credential is mounted, into the sidecar container alone (never the agent container, never a sandbox
// pod, never as a value in the pod spec); every other one is a McpServersReady=False condition naming the server
// and the Secret, and a key the sidecar does not find (its real status reporter) is named there too. A stdio server
// whose env names its (opted-in) Secret without the admin's secretEnvInSandbox gets nothing mounted, and is named.
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKubeClient } from "../../../src/kube/client.ts";
import { createRunStatusReporter } from "../../../src/sidecar/cluster/run-status-reporter.ts";
import type { RunStatusSnapshot } from "../../../src/sidecar/core/status-snapshot.ts";
import { createLogger } from "../../../src/log/logger.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, childrenOf, conditionOf, createAgent, createRun, OURS, startTestOperator, waitForCustom, type TestOperator } from "./operator-harness.ts";

const TOKEN = "tkn-value-never-in-a-pod-spec";
let namespace = "";
let op: TestOperator;

const server = (name: string, secret: string) => ({ name, url: `https://${name}.mcp.example/mcp`, headers: { Authorization: "Bearer ${TOKEN}" }, secretRef: { name: secret } });

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("mcp-secrets");
  await applyPolicy({
    ceilings: { runtimeImages: ["registry.example/runtime:*"] },
    mcpServers: [
      server("tickets", "tickets-mcp"), server("plain", "db-password"), server("both", "model-key"), server("absent", "no-such-secret"), { name: "open", url: "https://open.mcp.example/mcp" },
      { name: "sandboxed", command: "mcp-sandboxed", env: { TOKEN: "${TOKEN}" }, secretRef: { name: "sandboxed-mcp" } },
    ],
  });
  const { core } = testCluster();
  const secret = (name: string, labels: Record<string, string>) => core.createNamespacedSecret({ namespace, body: { metadata: { name, labels }, stringData: { TOKEN } } });
  await secret("tickets-mcp", { "leviath.dev/mcp-server": "tickets" });
  // A Secret of the namespace that nobody opted in: the admin's policy naming it is not enough.
  await secret("db-password", {});
  // Opted in for the server, but also as a credential any Run may hand to its runtime image.
  await secret("model-key", { "leviath.dev/mcp-server": "both", "leviath.dev/credential": "true" });
  // Opted in for its stdio server by its owner, but the admin did not let that server take it into the sandbox.
  await secret("sandboxed-mcp", { "leviath.dev/mcp-server": "sandboxed" });
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("MCP servers' Secrets", () => {
  it("reach the sidecar container only, and only when opted in for that server", async () => {
    await createAgent(namespace, "helper", {
      image: "registry.example/runtime:1",
      stages: [{ name: "main", availableConnectors: ["tickets", "plain", "both", "absent", "open", "sandboxed"], sandbox: { kind: "container", image: "debian:bookworm-slim" } }],
    });
    await createRun(namespace, "mcp-1", { agentRef: { name: "helper" } });
    const pods = await waitFor(async () => {
      const p = (await childrenOf(namespace, "mcp-1")).filter((c) => c.ref.startsWith("Pod/")).map((c) => c.obj as V1Pod);
      return p.length >= 2 ? p : undefined;
    }, { description: "the engine and sandbox pods" });
    const engine = pods.find((p) => p.metadata?.name === "mcp-1-engine")!;
    const secretVolumes = (p: V1Pod) => (p.spec?.volumes ?? []).filter((v) => v.secret !== undefined || v.projected?.sources?.some((s) => s.secret !== undefined));
    // One Secret volume in the whole run: tickets-mcp, optional (a Secret deleted since leaves the server unoffered).
    expect(secretVolumes(engine).map((v) => [v.secret?.secretName, v.secret?.optional])).toEqual([["tickets-mcp", true]]);
    const volume = secretVolumes(engine)[0]!.name;
    const sidecar = engine.spec!.initContainers!.find((c) => c.name === "sidecar")!;
    expect(sidecar.volumeMounts?.filter((m) => m.name === volume).map((m) => [m.mountPath, m.readOnly])).toEqual([["/var/run/leviath/mcp-secrets/tickets-mcp", true]]);
    expect(sidecar.args?.join(" ")).toContain("--mcp-secrets-dir /var/run/leviath/mcp-secrets");
    for (const c of engine.spec!.containers) {
      expect(c.volumeMounts?.map((m) => m.name)).not.toContain(volume);
      expect(JSON.stringify([c.env, c.envFrom])).not.toContain("tickets-mcp");
    }
    for (const p of pods.filter((x) => x !== engine)) expect(secretVolumes(p)).toEqual([]);
    // The pod spec names the Secret, never a value of it.
    expect(JSON.stringify(pods)).not.toContain(TOKEN);

    const run = await waitForCustom("runs", namespace, "mcp-1", (r) => conditionOf(r, "McpServersReady") !== undefined, "McpServersReady");
    const c = conditionOf(run, "McpServersReady")!;
    expect(c).toMatchObject({ status: "False", reason: "SecretNotOptedIn" });
    expect(c.message).toContain(`MCP server 'plain': Secret 'db-password' lacks the label leviath.dev/mcp-server: "plain"`);
    expect(c.message).toContain("MCP server 'both': Secret 'model-key' is also a credential");
    expect(c.message).toContain(`MCP server 'absent': Secret 'no-such-secret' not found in namespace '${namespace}'`);
    expect(c.message).toContain("MCP server 'sandboxed': env 'TOKEN': ${TOKEN} would put a value of Secret 'sandboxed-mcp' into the sandbox pod, where the model's commands can read it; the server is not started (the admin allows it with secretEnvInSandbox: true on the server)");
    expect(c.message).not.toContain("'tickets'");
  });

  it("names a key the sidecar did not find, from the sidecar's own report", async () => {
    const client = createKubeClient(testCluster().kc);
    const snapshot = (mcpServers: RunStatusSnapshot["mcpServers"]): RunStatusSnapshot => ({
      run: "mcp-1", agent: `${namespace}/helper`, mode: "interactive", stage: { index: 0, name: "main" }, taint: { tracking: false, level: "public" },
      gateDecisions: {}, pendingApprovals: [], pendingApprovalsOmitted: 0, policy: { ok: true }, ...(mcpServers ? { mcpServers } : {}),
    });
    let report = snapshot([
      { name: "tickets", offered: false, tools: 0, message: "mcp server 'tickets' header 'Authorization': key 'TOKEN' is not in Secret 'tickets-mcp'" },
      { name: "open", offered: true, tools: 3 },
    ]);
    const reporter = createRunStatusReporter({ client, namespace, run: "mcp-1", status: () => report, log: createLogger("error") });
    expect(await reporter.report()).toBe(true);
    const run = await waitForCustom("runs", namespace, "mcp-1", (r) => conditionOf(r, "McpServersReady")?.message?.includes("key 'TOKEN'") === true, "the key named");
    expect(conditionOf(run, "McpServersReady")?.message).toContain("mcp server 'tickets' header 'Authorization': key 'TOKEN' is not in Secret 'tickets-mcp'");
    expect(run.status?.["mcpServers"]).toEqual([
      { name: "tickets", offered: false, tools: 0, message: "mcp server 'tickets' header 'Authorization': key 'TOKEN' is not in Secret 'tickets-mcp'" },
      { name: "open", offered: true, tools: 3 },
    ]);
    report = snapshot([{ name: "tickets", offered: true, tools: 1 }, { name: "open", offered: true, tools: 3 }]);
    expect(await reporter.report()).toBe(true);
    const fixed = await waitForCustom("runs", namespace, "mcp-1", (r) => conditionOf(r, "McpServersReady")?.message?.includes("key 'TOKEN'") === false, "the key no longer named");
    // Still False: the Secrets refused at start stay refused (pinned), whatever the sidecar says.
    expect(conditionOf(fixed, "McpServersReady")).toMatchObject({ status: "False", reason: "SecretNotOptedIn" });
  });
});
