// Suite `shell-call` (issue 42): one `shell true` call in a sandbox pod of a cluster, answered, on the real node
// (kubelet, containerd, runc; test/e2e's harness), as the sidecar runs it: the sidecar's own cluster shell over
// the sidecar's own API client, against a sandbox pod with the operator's restricted settings and PID 1. Two ways:
// the channel kept open per pod (pod-channel-shell.ts, what the sidecar does now) and an exec per call
// (pod-exec-shell.ts, what it did before, and still does for a call that finds the channel busy). Each call is
// timed from `run` to its result, one after another, after one call not counted (the channel's opening, the
// kubelet's first exec). Requests to the API server per call are counted twice: the client's own (every request
// and WebSocket upgrade it makes) and the API server's (`apiserver_request_total` for pods/exec, from /metrics).
// Needs root, like test/e2e. Run with: npm run bench -- shell-call [--calls 300]
import { connectKube, type ClusterClient } from "../src/kube/connect.ts";
import { createPodExec } from "../src/kube/pod-exec.ts";
import { SANDBOX_PID1 } from "../src/sandbox/pods.ts";
import { createClusterShell } from "../src/sidecar/executors/pod-channel-shell.ts";
import { createPodExecShell } from "../src/sidecar/executors/pod-exec-shell.ts";
import type { RunStage, ShellExecutor } from "../src/sidecar/executors/shell.ts";
import { startNode } from "../test/e2e/harness/node.ts";
import { buildSandboxPod } from "../test/e2e/harness/sandbox-pod.ts";
import { numberFlag, SuiteRecord } from "./bench-results.ts";
import { printTable, summarize, type Row } from "./bench-stats.ts";
import { startBenchCluster, until } from "./controller-cluster.ts";

const NS = "bench-shell-call";
const POD = "sandbox";
const CALLS = numberFlag("calls", 300);
const say = (line: string) => process.stdout.write(`[shell-call] ${line}\n`);
const stage = { name: "main", sandbox: { kind: "container", network: false, mounts: [], persist: false, onUnavailable: "error", source: "policy" } } as RunStage;

/** The client with every request and upgrade it makes counted. */
function countRequests(client: ClusterClient): { client: ClusterClient; count: () => number } {
  let n = 0;
  const counted = new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "request" || prop === "watch" || prop === "upgradeTarget") {
        return (...args: unknown[]) => {
          n++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { client: counted, count: () => n };
}

/** The API server's count of pods/exec requests so far, from its /metrics. */
async function serverExecs(text: () => Promise<string>): Promise<number> {
  let sum = 0;
  for (const line of (await text()).split("\n")) {
    if (line.startsWith("apiserver_request_total{") && line.includes('resource="pods"') && line.includes('subresource="exec"')) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

const record = new SuiteRecord("shell-call", { calls: CALLS });
const cluster = await startBenchCluster(NS, say);
const node = await startNode(cluster.cp, { log: (l) => say(`node: ${l}`), images: [] });
const { kube } = cluster;
try {
  await kube.call("POST", `/api/v1/namespaces/${NS}/pods`, buildSandboxPod({ name: POD, namespace: NS, image: node.images.sandbox!, command: SANDBOX_PID1 }));
  type PodView = { status?: { containerStatuses?: { state?: { running?: object } }[] } };
  await until(async () => (await kube.call<PodView>("GET", `/api/v1/namespaces/${NS}/pods/${POD}`)).status?.containerStatuses?.[0]?.state?.running !== undefined, "the sandbox pod to run", 120_000);
  const rows: Row[] = [];
  const perCall: Record<string, { client: number; serverExecs: number }> = {};
  const ways: [string, (exec: ReturnType<typeof createPodExec>) => ShellExecutor][] = [
    ["channel (one per pod, held open)", (exec) => createClusterShell({ exec, namespace: NS, target: () => ({ pod: POD, container: "sandbox" }) })],
    ["exec per call (before)", (exec) => createPodExecShell({ exec, namespace: NS, target: () => ({ pod: POD, container: "sandbox" }) })],
  ];
  for (const [name, make] of ways) {
    const counted = countRequests(await connectKube(cluster.cp.kubeconfigPath, {}));
    const shell = make(createPodExec(counted.client));
    const warm = await shell.run({ command: "true", timeoutSeconds: 30, stage });
    if (warm.exitCode !== 0) throw new Error(`${name}: the first call failed: ${JSON.stringify(warm)}`);
    const clientBefore = counted.count();
    const serverBefore = await serverExecs(() => kube.text("/metrics"));
    const samples: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      const r = await shell.run({ command: "true", timeoutSeconds: 30, stage });
      samples.push((performance.now() - t0) * 1e6);
      if (r.exitCode !== 0 || r.error !== undefined) throw new Error(`${name}: call ${i} failed: ${JSON.stringify(r)}`);
    }
    const client = (counted.count() - clientBefore) / CALLS;
    const server = (await serverExecs(() => kube.text("/metrics")) - serverBefore) / CALLS;
    perCall[name] = { client, serverExecs: server };
    rows.push({ name: `\`shell true\`, ${name}`, summary: summarize(samples), target: "p50 ≤ 20 ms, p99 ≤ 100 ms", note: `${client.toFixed(2)} API requests per call (client), ${server.toFixed(2)} pods/exec per call (API server)` });
    say(`${name}: done`);
  }
  printTable("one `shell true` call in a sandbox pod, answered, one after another", rows);
  record.add("one `shell true` call in a sandbox pod, answered, one after another", rows);
  record.extra["requestsPerCall"] = perCall;
  record.write();
} finally {
  await node.stop();
  await cluster.stop();
}
