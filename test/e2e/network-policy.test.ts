// `network = false`, proven on the real node (issue 15): kube-router's firewall enforces NetworkPolicy here
// (test/e2e/harness/network-policy.ts), the operator is installed with real helm and makes the pods itself
// (an Agent with a `network: false` and a `network: true` stage, one Run), and every claim is checked from
// inside those running pods: the closed one reaches no pod, no Service, not the node, not the API server and
// no resolver, while the open one of the same Run reaches each of them (so a refusal is the data plane's,
// not a missing server's); the engine pod's sidecar still reaches the API server and execs into both; a
// NetworkPolicy deleted mid-Run comes back, enforced again, and the Run's condition says what happened.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { getJson } from "./harness/kube-json.ts";
import { createMetricsReader, scrapeController } from "./harness/metrics-access.ts";
import { isPodFirewalled } from "./harness/network-policy.ts";
import { firstHost } from "./harness/node.ts";
import { listenDns, listenTcp, type Listener } from "./harness/node-listeners.ts";
import {
  applyObjects, buildTwoStageAgent, cleanUp, getRun, installOperator, NS, RELEASE, runtimeLines, SYSTEM_NS, waitForRunPods,
  type PodList,
} from "./harness/operator-fixture.ts";
import { buildSandboxPod, execInPod, runPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "netpol-agent";
const RUN = "netpol-run";
const SERVER = "netpol-echo";
const DNS_NAME = "probe.leviath.test";
const DNS_ADDRESS = "192.0.2.10";

/**
 * The body of `GET /index.html` from `host:8080`, or `refused`: over busybox `nc` (its static `wget` dies with
 * SIGSEGV resolving even a numeric address in these pods, which would pass for a refusal).
 */
async function httpFrom(pod: string, host: string): Promise<string> {
  const r = await execInPod(NS, pod, `if printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${host} 8080 >/tmp/http.out 2>&1; then sed -n '$p' /tmp/http.out; else echo refused; fi`);
  return r.stdout.trim() || `(nothing: exit ${r.exitCode}, ${r.stderr.trim()})`;
}

/** `connected` when a TCP connection (and the server's first line) got through within 3 s, else `refused`. */
async function tcpFrom(pod: string, host: string, port: number): Promise<string> {
  const r = await execInPod(NS, pod, `if nc -w 3 ${host} ${port} </dev/null >/tmp/nc.out 2>&1; then echo connected; cat /tmp/nc.out; else echo refused; fi`);
  return r.stdout.trim();
}

type ProbeObject = {
  kind: string; metadata: { name: string; creationTimestamp?: string; deletionTimestamp?: string };
  status?: { phase?: string; containerStatuses?: { state?: Record<string, { reason?: string; exitCode?: number }> }[] };
};

/** One probe object as a failure message shows it: kind, name, age, phase, its container's state, and deletion. */
function describeProbeObject(o: ProbeObject): string {
  const state = o.status?.containerStatuses?.[0]?.state ?? {};
  const container = Object.entries(state).map(([k, v]) => `${k}${v.reason ? `(${v.reason})` : ""}${v.exitCode === undefined ? "" : ` exit ${v.exitCode}`}`).join(",");
  return [`${o.kind} ${o.metadata.name} created ${o.metadata.creationTimestamp ?? "?"}`, o.status?.phase, container || undefined,
    o.metadata.deletionTimestamp ? `deleting since ${o.metadata.deletionTimestamp}` : undefined].filter(Boolean).join(" ");
}

describe("network = false on a node that enforces NetworkPolicy", () => {
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  const gateway = node.network.gateway;
  const apiService = firstHost(node.network.serviceCidr);
  let closed = "";
  let open = "";
  let serverIp = "";
  let tcp: Listener | undefined;
  let dns: Listener | undefined;

  beforeAll(async () => {
    if (!node.networkPolicy) throw new Error("the e2e node was started without its NetworkPolicy data plane");
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    tcp = await listenTcp(gateway, "hello-from-the-node");
    dns = await listenDns(gateway, DNS_NAME, DNS_ADDRESS);
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: {
        spec: {
          sandbox: { kind: "container", image: sandbox, onUnavailable: "error" },
          security: { taintTracking: true },
          toolPermissions: { shell: "allow", submit_output: "allow" },
          // The operator's own check: network = false Runs wait until its probe has seen a deny-all policy drop packets.
          networkEnforcement: { verify: true, namespace: NS, onUnverified: "refuse", probeTimeoutSeconds: 120 },
        },
      },
    });
    // A test server in its own pod (busybox httpd on 8080), outside the Run.
    const server = await runPod(buildSandboxPod({ name: SERVER, namespace: NS, image: sandbox, labels: { "leviath.e2e/role": "server" } }));
    serverIp = server.status?.podIP ?? "";
    const served = await execInPod(NS, SERVER, "echo served > /tmp/index.html && httpd -p 8080 -h /tmp");
    expect(served.exitCode, served.stderr).toBe(0);

    const objects = [
      buildTwoStageAgent({
        name: AGENT, sandbox, description: "e2e network", toolPermissions: { shell: "allow", submit_output: "allow", send_email: "ask" },
        surveyTools: ["read_file", "shell"], digestTools: ["shell", "send_email", "submit_output"],
      }),
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
        // The runtime's flow, then a send_email that waits for a person: the Run stays in progress while the tests look.
        spec: { agentRef: { name: AGENT }, task: "e2e", mode: "interactive", deadlines: { sandboxReadySeconds: 300 }, runtime: { e2e: { holdTool: "send_email" } } },
      },
    ];
    await applyObjects(objects);
    const pods = await waitForRunPods(RUN, 3);
    const sandboxes = pods.filter((p) => p.metadata.name.startsWith(`${RUN}-sbx-`));
    closed = sandboxes.find((p) => p.metadata.labels?.["leviath.dev/network"] === "none")?.metadata.name ?? "";
    open = sandboxes.find((p) => p.metadata.labels?.["leviath.dev/network"] === undefined)?.metadata.name ?? "";
    expect(closed && open, JSON.stringify(sandboxes.map((p) => p.metadata))).toBeTruthy();
    // A pod is enforced once kube-router has its chain; until then it is as open as any other.
    for (const pod of [closed, open, SERVER]) {
      await waitFor(() => isPodFirewalled(NS, pod), { timeoutMs: 60_000, intervalMs: 500, description: `kube-router to program ${pod}` });
    }
  });

  afterAll(async () => {
    await kubectl(["delete", "pod", SERVER, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await cleanUp([RUN]);
    await tcp?.close();
    await dns?.close();
  });

  it("the operator's probe verified enforcement on this node before the Run started", async () => {
    // The probe's pods and policy are gone again (the last probe's verdict is in). The chart's default policy
    // (verify on) was probed first and this file's (another networkEnforcement section) again: that second probe
    // may still be running.
    // Bounded by the probe's own bounds (server start, then the clients' verdict, each probeTimeoutSeconds = 120),
    // plus the deletion: a slow node is waited for; a stuck probe fails naming where each of its objects stands.
    await waitFor(async () => {
      const left = await getJson<{ items: ProbeObject[] }>(["get", "pods,networkpolicies", "-n", NS, "-l", "leviath.dev/network-probe"]);
      if (left.items.length === 0) return true;
      throw new Error(left.items.map(describeProbeObject).join("; "));
    }, { timeoutMs: 270_000, intervalMs: 500, description: "the network probe's pods and policy gone" });
    const policy = await getJson<{ status?: { networkEnforcement?: { state: string; message: string; node?: string; checkedAt?: string } } }>(["get", "leviathpolicy", "cluster"]);
    expect(policy.status?.networkEnforcement).toMatchObject({ state: "Verified", node: node.name });
    expect(policy.status?.networkEnforcement?.message).toBe("a probe pod under a deny-all NetworkPolicy was refused while its twin without one connected");
    // The Run's condition follows the policy's last verdict (its reconcile may come a moment after it).
    const isolated = await waitFor(async () => {
      const c = (await getRun(RUN)).status?.conditions?.find((x) => x.type === "NetworkIsolated");
      return c?.message?.includes(`at ${policy.status?.networkEnforcement?.checkedAt}`) ? c : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "NetworkIsolated naming the last probe's time" });
    expect(isolated).toMatchObject({ status: "True", reason: "NetworkPolicyEnforced" });
    expect(isolated.message).toContain(`enforcement verified on this cluster at ${policy.status?.networkEnforcement?.checkedAt}`);
    const controller = await getJson<PodList>(["get", "pods", "-n", SYSTEM_NS]);
    const podIp = controller.items[0]!.status!.podIP!;
    // As Prometheus scrapes it with the chart's defaults: HTTPS, a token bound to the metrics-reader role.
    expect((await scrapeController(RELEASE, SYSTEM_NS, podIp)).status).toBe(401);
    const scraped = await scrapeController(RELEASE, SYSTEM_NS, podIp, await createMetricsReader(RELEASE, SYSTEM_NS));
    expect(scraped.status).toBe(200);
    const metrics = scraped.body;
    expect(metrics).toMatch(/^leviath_network_enforcement\{state="Verified"\} 1$/m);
    expect(metrics).toMatch(/^leviath_network_probes_total\{result="Verified"\} [1-9]/m);
  }, 330_000);

  it("the network = true sandbox pod reaches a pod, the API server's Service, the node and a resolver", async () => {
    expect(await httpFrom(open, serverIp)).toBe("served");
    expect(await tcpFrom(open, apiService, 443)).toBe("connected");
    expect(await tcpFrom(open, gateway, tcp!.port)).toBe("connected\nhello-from-the-node");
    const lookup = await execInPod(NS, open, `nslookup ${DNS_NAME} ${gateway}`);
    expect(lookup.stdout, lookup.stderr).toContain(DNS_ADDRESS);
  });

  it("the network = false sandbox pod reaches none of them, and nothing reaches it", async () => {
    expect(await httpFrom(closed, serverIp)).toBe("refused");
    // The `kubernetes` Service: the API server, as every pod sees it (its DNAT to loopback is on this node).
    expect(await tcpFrom(closed, apiService, 443)).toBe("refused");
    expect(await tcpFrom(closed, gateway, tcp!.port)).toBe("refused");
    const lookup = await execInPod(NS, closed, `nslookup ${DNS_NAME} ${gateway}`);
    // busybox nslookup exits 1 after "connection timed out; no servers could be reached" (not a crash: 139).
    expect(lookup.exitCode, lookup.stdout + lookup.stderr).toBe(1);
    expect(lookup.stdout).not.toContain(DNS_ADDRESS);
    // Ingress is denied too: a server in the closed pod is out of the open pod's reach.
    const serve = await execInPod(NS, closed, "echo inside > /tmp/index.html && httpd -p 8080 -h /tmp");
    expect(serve.exitCode, serve.stderr).toBe(0);
    const closedIp = (await getJson<{ status?: { podIP?: string } }>(["get", "pod", closed, "-n", NS])).status?.podIP ?? "";
    expect(await httpFrom(open, closedIp)).toBe("refused");
    // Loopback inside the pod still works (as with `--network none`).
    expect(await httpFrom(closed, "127.0.0.1")).toBe("inside");
  });

  it("the engine pod's sidecar still reaches the API server and execs into both sandbox pods", async () => {
    const lines = await waitFor(async () => {
      const got = await runtimeLines(RUN);
      return got.some((l) => l.step === "hold") ? got : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1000, description: "the runtime's held call (after both shells)" });
    const shell0 = lines.find((l) => l.step === "shell-stage0");
    const shell1 = lines.find((l) => l.step === "shell-outbound");
    expect(shell0).toMatchObject({ status: 200, body: { decision: "allow" } });
    expect(shell1).toMatchObject({ status: 200, body: { decision: "allow" } });
    // pods/exec from the sidecar: the network = false stage's shell ran in the closed pod, the other in the open one.
    expect(String(shell0!.body.result).split("\n")[0]).toBe(closed);
    expect(String(shell1!.body.result).split("\n")[0]).toBe(open);
    // The sidecar's status reports reached the API server (it writes the Run's decision counts).
    const run = await waitFor(async () => {
      const r = await getRun(RUN);
      return Object.keys(r.status?.gateDecisions ?? {}).length > 0 ? r : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "the sidecar's decision counts on the Run" });
    // In progress: running, or waiting for the person its held call asks (WaitingInput).
    expect(["Running", "WaitingInput"]).toContain(run.status?.phase);
  });

  it("a NetworkPolicy deleted mid-Run is put back, enforced again, and the condition says so", async () => {
    const policy = `${RUN}-isolate`;
    const before = await getJson<{ metadata: { uid: string } }>(["get", "networkpolicy", policy, "-n", NS]);
    await kubectl(["delete", "networkpolicy", policy, "-n", NS]);
    const after = await waitFor(async () => {
      const r = await kubectl(["get", "networkpolicy", policy, "-n", NS, "-o", "json"], { allowFailure: true });
      if (r.exitCode !== 0) return undefined;
      const np = JSON.parse(r.stdout) as { metadata: { uid: string } };
      return np.metadata.uid !== before.metadata.uid ? np : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the controller to re-create the NetworkPolicy" });
    expect(after.metadata.uid).not.toBe(before.metadata.uid);
    const condition = await waitFor(async () => {
      const r = await getRun(RUN);
      const c = r.status?.conditions?.find((x) => x.type === "NetworkIsolated");
      return c?.reason === "NetworkPolicyRestored" ? c : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "NetworkIsolated to say the policy was restored" });
    expect(condition.status).toBe("True");
    expect(condition.message).toMatch(new RegExp(`NetworkPolicy '${policy}' was missing and was re-created`));
    // Enforced again: kube-router picks the new object up from its watch.
    await waitFor(async () => (await tcpFrom(closed, gateway, tcp!.port)) === "refused" ? true : undefined,
      { timeoutMs: 30_000, intervalMs: 1000, description: "the re-created policy to be enforced" });
    expect(await tcpFrom(closed, apiService, 443)).toBe("refused");
    expect(await tcpFrom(open, gateway, tcp!.port)).toBe("connected\nhello-from-the-node");
  });
});
