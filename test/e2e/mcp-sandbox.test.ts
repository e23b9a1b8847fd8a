// Stdio MCP servers in sandbox pods on the real node. First the exec path itself, driven from here with the
// sidecar's own code (src/kube/pod-exec.ts over the node:https client, the pods/exec stdio launcher, the gateway): an exec started the
// moment a pod is created waits until its container runs (client-node's Exec alone fails then); the reference
// server-everything, from the leviath-mcp image, is listed and called over the exec stream, runs in the pod,
// and leaves no process behind once the connection closes; a reply line past 1 MiB drops the connection with
// upstream's message and ends the server. Then a Run whose runtime speaks only MCP to the sidecar (images/mcp/
// runtime.mjs): the Agent's stdio server runs in its sandbox pod (never in the engine pod), a call through it
// after a workspace read is asked by the taint gate and answered by an Approval made with kubectl, and the
// Run's audit shows the `everything__<tool>` calls.
import { randomUUID } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Exec } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { McpServer } from "../../src/api/leviath-policy.ts";
import { connectKube, type ClusterClient } from "../../src/kube/connect.ts";
import { buildExecPath } from "../../src/kube/exec-channel.ts";
import { createPodExec } from "../../src/kube/pod-exec.ts";
import { buildMcpReadFailureMessage } from "../../src/policy/size-caps.ts";
import { createPodExecStdioLauncher } from "../../src/sidecar/executors/pod-exec-stdio-server.ts";
import { McpGateway } from "../../src/sidecar/gateway/mcp-gateway.ts";
import { helm, kubectl, REPO_ROOT, testCluster, waitFor } from "../integration/harness/index.ts";
import { getJson, imageValues } from "./harness/kube-json.ts";
import { LOCAL_PATH_CLASS } from "./harness/local-path.ts";
import { NS, RELEASE, SYSTEM_NS, waitForWebhook } from "./harness/operator-fixture.ts";
import { buildSandboxPod, execInPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const EXEC_NS = "e2e-mcp-exec";
const AGENT = "e2e-mcp-agent";
const RUN = "e2e-mcp-run";
const EVERYTHING = "/opt/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, child: () => silent } as never;

/** Whether a command line is the server itself (the wrapper's own command line names it too, as an argument). */
const isServer = (line: string): boolean => line.startsWith("node ") && line.includes("server-everything");

/** The command lines of every process in a pod's container, read from /proc (minbase has no ps). */
async function processesIn(namespace: string, pod: string, container = "sandbox"): Promise<string[]> {
  const r = await execInPod(namespace, pod, "for p in /proc/[0-9]*; do tr '\\0' ' ' <\"$p/cmdline\" 2>/dev/null; echo; done", container);
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("tr ") && !l.startsWith("sh -c for p in"));
}

/** Every process of a pod's container: its command line and environment (NULs as spaces), read from /proc. */
async function processTable(namespace: string, pod: string): Promise<{ pid: string; cmdline: string; environ: string }[]> {
  const r = await execInPod(namespace, pod, "for p in /proc/[0-9]*; do printf '\\n@@%s\\n' \"${p#/proc/}\"; tr '\\0\\n' '  ' <\"$p/cmdline\" 2>/dev/null; printf '\\n'; tr '\\0\\n' '  ' <\"$p/environ\" 2>/dev/null; done");
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.split("\n@@").slice(1).map((block) => {
    const [pid = "", cmdline = "", environ = ""] = block.split("\n");
    return { pid, cmdline: cmdline.trim(), environ };
  });
}

describe("stdio MCP servers in a sandbox pod, over pods/exec", () => {
  const mcpImage = node.images["leviath-mcp"];
  const sandbox = node.images.sandbox!;
  let client: ClusterClient;
  const gateways: McpGateway[] = [];
  const gatewayIn = (pod: string, server: ConstructorParameters<typeof McpGateway>[0]["servers"][number]) => {
    const g = new McpGateway({
      servers: [server], vars: { kind: "env", env: {} }, log: silent,
      launchStdio: createPodExecStdioLauncher({ exec: createPodExec(client, 120_000), namespace: EXEC_NS, target: () => ({ pod, container: "sandbox" }) }),
    });
    gateways.push(g);
    return g;
  };

  beforeAll(async () => {
    if (!mcpImage) throw new Error("no leviath-mcp image: run 'bash scripts/build-images mcp'");
    // The client the sidecar picks for this kubeconfig (client certificates): node:https, exec over its own WebSocket.
    client = await connectKube(inject("kubeconfig"), {});
    if ("config" in client) throw new Error("connectKube picked @kubernetes/client-node for a client-certificate kubeconfig");
    await kubectl(["create", "namespace", EXEC_NS]);
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await kubectl(["delete", "namespace", EXEC_NS, "--wait=false"], { allowFailure: true });
  });

  it("waits for a container that is not running yet, runs server-everything in the pod, and leaves nothing behind when closed", async () => {
    const pod = "mcp-everything";
    await testCluster().core.createNamespacedPod({ namespace: EXEC_NS, body: { ...buildSandboxPod({ name: pod, namespace: EXEC_NS, image: mcpImage! }) } });
    // The race the wait closes: an exec the moment the pod exists has no running container to reach.
    const raw = new Exec(testCluster().kc);
    const early = await raw.exec(EXEC_NS, pod, "sandbox", ["true"], null, null, null, false).then(() => "opened", (e: unknown) => String((e as Error).message ?? e));
    expect(early).not.toBe("opened");
    const g = gatewayIn(pod, { name: "everything", command: "node", args: [EVERYTHING, "stdio"] });
    await g.ready();
    expect(g.tools().map((t) => t.name)).toEqual(expect.arrayContaining(["everything__echo", "everything__get-env"]));
    expect(await g.call("everything__echo", { message: "from the pod" })).toEqual({ text: "Echo: from the pod", isError: false });
    const env = JSON.parse((await g.call("everything__get-env", {})).text) as Record<string, string>;
    expect(env["HOSTNAME"]).toBe(pod);
    const running = await processesIn(EXEC_NS, pod);
    expect(running.filter(isServer)).toHaveLength(1);
    expect(running.some((l) => l.includes("leviath-mcp-stdio"))).toBe(true);
    await g.close();
    const left = await waitFor(async () => {
      const now = await processesIn(EXEC_NS, pod);
      return now.some((l) => l.includes("server-everything") || l.includes("leviath-mcp-stdio") || l.startsWith("dd ")) ? undefined : now;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "no MCP server process left in the pod" });
    // Only the pod's own `sleep infinity` is left.
    expect(left).toEqual(["sleep infinity"]);
  });

  it("a Secret's value in a stdio server's env: refused without the admin's opt-in; with it, never in the exec request nor any command line in the pod, and in no environment but the server's", async () => {
    const pod = "mcp-secret-env";
    await testCluster().core.createNamespacedPod({ namespace: EXEC_NS, body: buildSandboxPod({ name: pod, namespace: EXEC_NS, image: mcpImage! }) });
    const mark = `tok-${randomUUID()}`;
    const value = `${mark} it's "quoted" $(echo no)\nline two`;
    const dir = mkdtempSync(join(tmpdir(), "leviath-e2e-mcp-secrets-"));
    mkdirSync(join(dir, "everything-mcp"));
    writeFileSync(join(dir, "everything-mcp", "TOKEN"), value);
    // The request paths the API server receives (and an audit log records) for each exec the launcher makes.
    const requests: string[] = [];
    const exec = createPodExec(client, 120_000);
    const recorded: typeof exec = {
      exec: (namespace, name, container, command, ...rest) => {
        requests.push(buildExecPath({ namespace, pod: name, container, command, stdin: true, stdout: true, stderr: true, tty: false }));
        return exec.exec(namespace, name, container, command, ...rest);
      },
    };
    const gatewayFor = (server: McpServer) => {
      const g = new McpGateway({
        servers: [server], vars: { kind: "secrets", dir }, log: silent,
        launchStdio: createPodExecStdioLauncher({ exec: recorded, namespace: EXEC_NS, target: () => ({ pod, container: "sandbox" }) }),
      });
      gateways.push(g);
      return g;
    };
    const server: McpServer = { name: "everything", command: "node", args: [EVERYTHING, "stdio"], env: { TOKEN: "${TOKEN}" }, secretRef: { name: "everything-mcp" } };

    const refused = gatewayFor(server);
    await refused.ready();
    expect(refused.servers()[0]).toMatchObject({ offered: false, message: expect.stringContaining("mcp server 'everything' env 'TOKEN': ${TOKEN} would put a value of Secret 'everything-mcp' into the sandbox pod") });
    expect(requests).toEqual([]);

    const g = gatewayFor({ ...server, secretEnvInSandbox: true });
    await g.ready();
    expect(g.servers()[0]?.message ?? "offered").toBe("offered");
    expect(JSON.parse((await g.call("everything__get-env", {})).text)).toMatchObject({ TOKEN: value, HOSTNAME: pod });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toContain("leviath-mcp-stdio");
    expect(decodeURIComponent(requests[0]!)).not.toContain(mark);
    // What the model's commands see in the pod (the same user): every process's command line and environment.
    const seen = await processTable(EXEC_NS, pod);
    expect(seen.filter((p) => p.cmdline.includes(mark))).toEqual([]);
    const holding = seen.filter((p) => p.environ.includes(mark));
    expect(holding.length).toBeGreaterThan(0);
    expect(holding.every((p) => isServer(p.cmdline))).toBe(true);
    expect(seen.some((p) => p.cmdline.includes("leviath-mcp-stdio"))).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it("drops the connection past the 1 MiB line cap with upstream's message, and the server dies with it", async () => {
    const pod = "mcp-huge";
    await testCluster().core.createNamespacedPod({ namespace: EXEC_NS, body: buildSandboxPod({ name: pod, namespace: EXEC_NS, image: sandbox }) });
    const init = '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"huge","version":"1"}}}';
    const list = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"dump","inputSchema":{"type":"object"}}]}}';
    const script = `read -r l; echo '${init}'; read -r l; read -r l; echo '${list}'; read -r l; echo 'dumping' >&2; sleep 1; printf '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"'; head -c 1100000 /dev/zero | tr '\\0' x; echo '"}]}}'; sleep 600`;
    const g = gatewayIn(pod, { name: "huge", command: "sh", args: ["-c", script] });
    await g.ready();
    expect(g.tools().map((t) => t.name)).toEqual(["huge__dump"]);
    expect(await g.call("huge__dump", {})).toEqual({ text: `[error] ${buildMcpReadFailureMessage("dumping")}`, isError: true });
    await waitFor(async () => ((await processesIn(EXEC_NS, pod)).some((l) => l.startsWith("sleep 600")) ? undefined : true),
      { timeoutMs: 30_000, intervalMs: 500, description: "the capped server's processes gone from the pod" });
  });
});

type Line = { step: string; body: { text?: string; isError?: boolean } & Record<string, unknown> };

describe("a Run whose runtime speaks only MCP, with a stdio MCP server in its sandbox pod", () => {
  const operator = node.images["leviath-operator"];
  const mcpImage = node.images["leviath-mcp"];
  let workspaceDir = "";
  let sandboxPod = "";

  beforeAll(async () => {
    if (!operator || !mcpImage) throw new Error("no leviath-operator/leviath-mcp image: run 'bash scripts/build-images'");
    workspaceDir = mkdtempSync(join(tmpdir(), "leviath-e2e-mcp-"));
    chmodSync(workspaceDir, 0o777);
    writeFileSync(join(workspaceDir, "notes.md"), "internal notes\n");
    chmodSync(join(workspaceDir, "notes.md"), 0o644);
    const values = {
      image: { ...imageValues(operator), pullPolicy: "Never" },
      // The MCP-only runtime is the controller's default runtime image here.
      controller: { replicas: 1, runtimeImage: mcpImage, podDisruptionBudget: { enabled: false } },
      policy: {
        spec: {
          sandbox: { kind: "container", image: mcpImage, onUnavailable: "error" },
          security: { taintTracking: true },
          toolPermissions: { read_file: "allow", submit_output: "allow", "everything__echo": "allow", "everything__get-env": "allow" },
          mcpServers: [{ name: "everything", command: "node", args: [EVERYTHING, "stdio"] }],
        },
      },
    };
    await helm(["install", RELEASE, join(REPO_ROOT, "charts/leviath-operator"), "-n", SYSTEM_NS, "--create-namespace", "-f", "-"], { input: stringify(values), timeoutMs: 120_000 });
    await waitFor(async () => {
      const pods = await getJson<{ items: { status?: { phase?: string } }[] }>(["get", "pods", "-n", SYSTEM_NS]);
      return pods.items.length > 0 && pods.items.every((p) => p.status?.phase === "Running");
    }, { timeoutMs: 120_000, intervalMs: 1000, description: "the controller pod Running" });
    await waitForWebhook();
  });

  afterAll(async () => {
    await kubectl(["delete", "run", RUN, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await helm(["uninstall", RELEASE, "-n", SYSTEM_NS, "--wait", "--timeout", "60s"], { allowFailure: true, timeoutMs: 90_000 });
    await kubectl(["delete", "pv", `${RUN}-workspace`, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    if (workspaceDir) rmSync(workspaceDir, { recursive: true, force: true });
  });

  async function runtimeLines(): Promise<Line[]> {
    const r = await kubectl(["logs", "-n", NS, `${RUN}-engine`, "-c", "agent"], { allowFailure: true });
    return r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Line);
  }

  it("runs the server in the sandbox pod, gates the call after a read, answers it with an Approval, and audits the server's tools", async () => {
    const objects = [
      {
        apiVersion: "v1", kind: "PersistentVolume", metadata: { name: `${RUN}-workspace` },
        // Pre-bound, not the provisioner's: the workspace holds notes.md, planted at this host path before the Run.
        // Of the class the claim gets (the default, local-path): a volume binds only a claim of its own class.
        spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: LOCAL_PATH_CLASS, hostPath: { path: workspaceDir, type: "Directory" }, claimRef: { namespace: NS, name: `${RUN}-workspace` } },
      },
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT, namespace: NS },
        spec: {
          agent: { name: AGENT, version: "1.0.0", description: "e2e mcp" },
          sandbox: { kind: "container", image: mcpImage, network: false, onUnavailable: "error" },
          toolPermissions: { read_file: "allow", submit_output: "allow", "everything__echo": "allow", "everything__get-env": "allow" },
          stages: [{ name: "main", availableTools: ["read_file", "submit_output"], availableConnectors: ["everything"] }],
        },
      },
      { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS }, spec: { agentRef: { name: AGENT }, task: "mcp e2e", mode: "interactive" } },
    ];
    await kubectl(["apply", "-f", "-"], { input: objects.map((o) => stringify(o)).join("---\n") });

    const answered = new Set<string>();
    const asked: { id: string; tool: string; kind?: string; prompt?: string }[] = [];
    let seenRunning: string[] | undefined;
    let engineProcesses: string[] = [];
    const lines = await waitFor(async () => {
      const run = await getJson<{ status?: { pendingApprovals?: { id: string; tool: string; kind?: string; prompt?: string }[] } }>(["get", "run", RUN, "-n", NS]);
      for (const p of run.status?.pendingApprovals ?? []) {
        if (answered.has(p.id)) continue;
        if (seenRunning === undefined) {
          // While the runtime waits on the prompt: the server runs in the sandbox pod, and not in the engine pod.
          const pods = await getJson<{ items: { metadata: { name: string } }[] }>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${RUN},leviath.dev/component=sandbox`]);
          sandboxPod = pods.items[0]!.metadata.name;
          seenRunning = await processesIn(NS, sandboxPod);
          engineProcesses = await processesIn(NS, `${RUN}-engine`, "agent");
        }
        const approval = { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name: `e2e-mcp-${answered.size}`, namespace: NS }, spec: { runRef: { name: RUN }, approvalId: p.id, decision: "allowOnce", reason: "e2e" } };
        await kubectl(["create", "-f", "-"], { input: stringify(approval) });
        answered.add(p.id);
        asked.push(p);
      }
      const got = await runtimeLines();
      return got.some((l) => l.step === "done") ? got : undefined;
    }, { timeoutMs: 170_000, intervalMs: 1000, description: "the MCP runtime's 'done' line" });
    process.stderr.write(`[e2e mcp] prompts answered: ${JSON.stringify(asked)}\n`);
    process.stderr.write(`[e2e mcp] runtime:\n${lines.map((l) => JSON.stringify(l).slice(0, 300)).join("\n")}\n`);
    const step = (name: string) => lines.find((l) => l.step === name)!.body;

    expect(step("tools")).toEqual(expect.arrayContaining(["read_file", "submit_output", "everything__echo", "everything__get-env"]));
    const env = JSON.parse(step("env").text!) as Record<string, string>;
    expect(env["HOSTNAME"]).toBe(sandboxPod);
    expect(step("echo")).toMatchObject({ text: "Echo: hello from the sandbox", isError: false });
    expect(step("read")).toMatchObject({ text: "internal notes\n", isError: false });
    expect(step("echo-after-read")).toMatchObject({ text: "Echo: after the read", isError: false });
    expect(step("submit")).toMatchObject({ isError: false });
    // The taint gate held the echo after the read and the submit; with the chart's policy (integrity on), the echo
    // was also held twice as an acting call after get-env's output, which the unclassified server's tool made
    // untrusted. One prompt per held call (issue 44): the echo after the read, held by the gate and by integrity, is
    // asked about once, its prompt naming both; each echo's prompt names get-env's entry.
    expect(asked.map((p) => `${p.kind}:${p.tool}:${p.id.split("-")[0]}`)).toEqual([
      "tool_approval:everything__echo:integrity", "taint_gate:everything__echo:gate", "taint_gate:submit_output:gate",
    ]);
    for (const p of asked.filter((a) => a.tool === "everything__echo")) expect(p.prompt).toContain("from 'everything__get-env'");
    expect(asked[1]!.prompt).toMatch(/^This call is held for 2 reasons: \(1\) Tool 'everything__echo' would send Internal-level data .* \(2\) Tool 'everything__echo' was held: .* Allow it\?$/);
    expect(seenRunning?.filter(isServer)).toHaveLength(1);
    expect(engineProcesses.some((l) => l.includes("server-everything"))).toBe(false);

    const run = await waitFor(async () => {
      const r = await getJson<{ status?: { phase?: string; result?: { inline?: string } } }>(["get", "run", RUN, "-n", NS]);
      return r.status?.phase === "Succeeded" ? r : undefined;
    }, { timeoutMs: 90_000, intervalMs: 500, description: "the Run Succeeded" });
    expect(run.status?.result?.inline).toBe("mcp-only run done\n");

    const text = (await kubectl(["get", "configmap", "-n", NS, "-l", `leviath.dev/run=${RUN},leviath.dev/component=audit`, "-o", "jsonpath={range .items[*]}{.data.audit\\.jsonl}{end}"])).stdout;
    const records = text.split("\n").filter((l) => l.startsWith("{")).map((l) => (JSON.parse(l) as { leviath_audit: { record: Record<string, unknown> } }).leviath_audit.record);
    // Both echo calls were allowed in the end (each call's records: the permission's, and the gate's or the integrity hold's answer).
    expect(new Set(records.filter((r) => r["tool_name"] === "everything__echo" && r["decision"] === "allow").map((r) => r["call_id"])).size).toBe(2);
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "everything__get-env", decision: "allow" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "everything__echo", allowed: false, decision_source: "AutoBlock" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "everything__echo", allowed: true, decision_source: "UserAllowOnce" }));
  });
});
