// A warm Run on the real node (issue 32): the chart installed with controller.warmPools=true and a pool of one engine
// pod for an Agent whose image is the scripted runtime's (its entrypoint named as the pool's `command`, started with
// the pod and held on its binding: `runtimeStart: with-pod`, issue 42, so it is up before the Run exists); the pool
// pod's workspace claim is bound by the node's provisioner, as any claim. Once the pod is ready, credential
// Secrets and a Run like run-flow's are created: the Run adopts the pod and the sandbox pods made beside it
// (status.startedFrom = pool), and everything a cold Run guarantees is checked again on it from inside: the
// credentials reach the agent container (env and file, by hash) and neither the sidecar nor a sandbox pod; every
// container of the engine pod and the sandbox pods has no capability, NoNewPrivs and uid 65532; the Run's network =
// false sandbox is enforced by the node's NetworkPolicy data plane (kube-router, as in network-policy.test.ts: this
// suite's node always runs it) while its network = true twin reaches the node; the scripted runtime's flow runs
// through the adopted sidecar (a granted read, a refused read, shells in the sandbox pods, the taint gate answered
// with Approvals, submit_output) and the Run ends Succeeded by itself with its result; its audit, the binding's
// record included, is readable with one command after the pod ended; and the pool refills with a new ready pod.
import { createHash } from "node:crypto";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { buildCredentialSecret, buildFlowAgent, buildFlowPolicySpec, TEAM_NOTES } from "./harness/flow-objects.ts";
import { getJson } from "./harness/kube-json.ts";
import { execInPod, firstHost, isPodFirewalled } from "./harness/index.ts";
import { listenTcp, type Listener } from "./harness/node-listeners.ts";
import {
  applyObjects, buildApproval, cleanUp, conditionOf, getRun, installOperator, NS, parseAudit,
  readAuditText, runtimeLines, waitForPhase, waitForRunPods, type RunObject, type RuntimeLine,
} from "./harness/operator-fixture.ts";
import { credentialTraces, HARDENED, readHardening } from "./harness/pod-checks.ts";
import { readyPoolPods, waitForReadyPoolPod } from "./harness/pool-pods.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "warm-agent";
const RUN = "warm-run";
const MODEL_KEY = "sk-warm-model-key-value";
const FILE_TOKEN = "warm-file-token-value";
/** The leviath-runtime image's entrypoint (scripts/build-images): a pod cannot read it, so the pool names it. */
const ENTRYPOINT = ["/usr/local/bin/node", "/opt/leviath-runtime/runtime.mjs"];
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const say = (text: string) => process.stderr.write(`[e2e warm-pool] ${text}\n`);

type WarmRun = RunObject & { metadata: { creationTimestamp?: string }; status?: { startedFrom?: string; enginePod?: string; workspace?: string } };
type PolicyStatus = { status?: { networkEnforcement?: { state?: string }; pools?: { agent: string; size: number; ready: number; adoptions: number }[] } };

/** `connected` when a TCP connection (and the server's first line) got through within 3 s, else `refused`. */
async function tcpFrom(pod: string, host: string, port: number): Promise<string> {
  const r = await execInPod(NS, pod, `if nc -w 3 ${host} ${port} </dev/null >/tmp/nc.out 2>&1; then echo connected; cat /tmp/nc.out; else echo refused; fi`);
  return r.stdout.trim();
}

/** The runtime's line `name`, failing when it printed none. */
function stepOf(lines: readonly RuntimeLine[], name: string): RuntimeLine {
  const line = lines.find((l) => l.step === name);
  if (!line) throw new Error(`no '${name}' line in ${JSON.stringify(lines)}`);
  return line;
}

describe("a Run adopting a warm pool pod on the real node", () => {
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  const gateway = node.network.gateway;
  let listener: Listener | undefined;
  let poolPod = "";
  let createdAt = 0;
  let heldAt = 0;
  let closed = "";
  let open = "";

  beforeAll(async () => {
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    if (!node.networkPolicy) throw new Error("the e2e node was started without its NetworkPolicy data plane");
    listener = await listenTcp(gateway, "hello-from-the-node");
  });

  afterAll(async () => {
    // The Agent owns its unbound pool pods: they go with it (before the chart, whose controller would refill them).
    await kubectl(["delete", "agent", AGENT, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await cleanUp([RUN]);
    await kubectl(["delete", "pods,persistentvolumeclaims", "-n", NS, "-l", `leviath.dev/pool=${AGENT}`, "--ignore-not-found"], { allowFailure: true, timeoutMs: 120_000 });
    await listener?.close();
  });

  it("installs the chart with controller.warmPools=true and keeps a ready pool pod with nothing of any Run in it", async () => {
    await installOperator(node, {
      controller: { runtimeImage: runtime, warmPools: true },
      policy: {
        spec: {
          ...buildFlowPolicySpec(sandbox, AGENT),
          networkEnforcement: { verify: true, namespace: NS, onUnverified: "refuse", probeTimeoutSeconds: 120 },
          pools: [{ agent: `${NS}/${AGENT}`, size: 1, command: ENTRYPOINT, runtimeStart: "with-pod" }],
        },
      },
    });
    await applyObjects([
      TEAM_NOTES,
      buildFlowAgent(AGENT, sandbox, "e2e warm"),
    ]);
    const ready = await waitForReadyPoolPod(AGENT);
    poolPod = ready.metadata.name;
    say(`ready pool pod ${poolPod}`);
    expect(ready.metadata.labels?.["leviath.dev/run"]).toBeUndefined();
    expect(ready.metadata.annotations?.["leviath.dev/bound-run"]).toBeUndefined();
    // Nothing of a Run mounted: no Secret volume, no snapshot ConfigMap; the runtime is up, held by bound-exec.
    const spec = await getJson<{ spec: { volumes?: { secret?: unknown; configMap?: { name: string } }[]; containers: { name: string; command?: string[] }[] } }>(["get", "pod", poolPod, "-n", NS]);
    expect((spec.spec.volumes ?? []).filter((v) => v.secret !== undefined || (v.configMap !== undefined && v.configMap.name !== "team-notes"))).toEqual([]);
    expect(spec.spec.containers.find((c) => c.name === "agent")?.command).toEqual(["leviath", "bound-exec", "--held", "--", ...ENTRYPOINT]);
    // The runtime's process is running already, with no Run: its first line says so, and nothing else came yet.
    const held = await waitFor(async () => {
      const got = await runtimeLines(AGENT, poolPod).catch(() => [] as RuntimeLine[]);
      return got.find((l) => l.step === "held") ? got : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the pool pod's runtime to be up and held" });
    expect(held.map((l) => [l.step, l.body.run])).toEqual([["held", null]]);
    heldAt = Number(held[0]!.body.startedAt);
    const policy = await waitFor(async () => {
      const p = await getJson<PolicyStatus>(["get", "leviathpolicy", "cluster"]);
      return p.status?.pools?.[0]?.ready === 1 ? p : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the policy's status to count the ready pool pod" });
    expect(policy.status?.pools?.[0]).toMatchObject({ agent: `${NS}/${AGENT}`, size: 1, ready: 1 });
    // The network = false stage waits for the operator's probe: created after its verdict, the Run adopts at once.
    await waitFor(async () => (await getJson<PolicyStatus>(["get", "leviathpolicy", "cluster"])).status?.networkEnforcement?.state === "Verified",
      { timeoutMs: 270_000, intervalMs: 500, description: "the operator's network probe to verify enforcement" });
  }, 600_000);

  it("adopts the ready pool pod for a Run with credential Secrets: startedFrom pool, the pool pod its engine pod", async () => {
    await applyObjects([
      buildCredentialSecret("warm-model-key", { E2E_MODEL_KEY: MODEL_KEY }),
      buildCredentialSecret("warm-files", { token: FILE_TOKEN }),
    ]);
    createdAt = Date.now();
    await applyObjects([{
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
      spec: {
        agentRef: { name: AGENT }, task: "e2e warm", mode: "interactive", deadlines: { sandboxReadySeconds: 300 },
        credentials: [{ secretName: "warm-model-key" }, { secretName: "warm-files", as: "files" }],
        runtime: { e2e: { credentialFile: "/var/run/leviath/credentials/warm-files/token" } },
      },
    }]);
    const run = await waitFor(async () => {
      const r = await getRun(RUN) as WarmRun;
      return r.status?.startedFrom !== undefined ? r : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250, description: "the Run's startedFrom" });
    expect(run.status).toMatchObject({ startedFrom: "pool", enginePod: poolPod, workspace: `${poolPod}-workspace` });
    const pods = await waitForRunPods(RUN, 3);
    expect(pods.map((p) => p.metadata.name)).toContain(poolPod);
    expect((await kubectl(["get", "pod", `${RUN}-engine`, "-n", NS], { allowFailure: true })).exitCode).not.toBe(0);
    // The sandbox pods are the pool's too: made beside the pool pod before the Run, adopted with it.
    const sandboxes = pods.filter((p) => p.metadata.labels?.["leviath.dev/component"] === "sandbox");
    expect(sandboxes.map((p) => p.metadata.name).filter((n) => !n.startsWith(`${poolPod}-sbx-`))).toEqual([]);
    closed = sandboxes.find((p) => p.metadata.labels?.["leviath.dev/network"] === "none")?.metadata.name ?? "";
    open = sandboxes.find((p) => p.metadata.labels?.["leviath.dev/network"] === undefined)?.metadata.name ?? "";
    expect(closed && open, JSON.stringify(sandboxes.map((p) => p.metadata))).toBeTruthy();
  });

  it("keeps the hardening inside every container of the adopted pod and the sandbox pods, and the credentials out of the sidecar and the sandboxes", async () => {
    for (const [pod, container] of [[poolPod, "agent"], [poolPod, "sidecar"], [closed, "sandbox"], [open, "sandbox"]] as const) {
      expect(await readHardening(NS, pod, container), `${pod}/${container}`).toEqual(HARDENED);
    }
    for (const [pod, container] of [[poolPod, "sidecar"], [closed, "sandbox"], [open, "sandbox"]] as const) {
      expect(await credentialTraces(NS, pod, container, "E2E_MODEL_KEY", FILE_TOKEN), `${pod}/${container}`).toEqual(["0", "absent", "0", "0"]);
    }
    // The sidecar read the Secrets to hand them over, and kept nothing of them on its filesystem.
    const kept = await execInPod(NS, poolPod, `grep -rl -e ${MODEL_KEY} -e ${FILE_TOKEN} /tmp /var/run 2>/dev/null | wc -l`, "sidecar");
    expect(kept.stdout.trim()).toBe("0");
  });

  it("enforces the network = false sandbox of the adopted Run, while its network = true twin reaches the node", async () => {
    for (const pod of [closed, open]) {
      await waitFor(() => isPodFirewalled(NS, pod), { timeoutMs: 60_000, intervalMs: 500, description: `kube-router to program ${pod}` });
    }
    expect(await tcpFrom(open, gateway, listener!.port)).toBe("connected\nhello-from-the-node");
    expect(await tcpFrom(closed, gateway, listener!.port)).toBe("refused");
    expect(await tcpFrom(closed, firstHost(node.network.serviceCidr), 443)).toBe("refused");
    const isolated = conditionOf(await getRun(RUN), "NetworkIsolated");
    expect(isolated).toMatchObject({ status: "True", reason: "NetworkPolicyEnforced" });
  });

  it("runs the scripted runtime's flow through the adopted sidecar, with the Run's credentials, until it ends Succeeded by itself", async () => {
    const answered = new Set<string>();
    const lines = await waitFor(async () => {
      for (const p of (await getRun(RUN)).status?.pendingApprovals ?? []) {
        if (answered.has(p.id)) continue;
        await kubectl(["create", "-f", "-"], { input: stringify(buildApproval(`warm-${answered.size}`, RUN, p.id, "e2e warm")) });
        answered.add(p.id);
      }
      const got = await runtimeLines(RUN, poolPod);
      return got.some((l) => l.step === "done") ? got : undefined;
    }, { timeoutMs: 150_000, intervalMs: 1000, description: "the runtime's 'done' line" });
    say(`runtime:\n${lines.map((l) => JSON.stringify(l)).join("\n")}`);
    expect(stepOf(lines, "config").body).toMatchObject({ task: "e2e warm", mode: "interactive", stages: ["survey", "digest"] });
    expect(stepOf(lines, "credentials").body).toEqual({ env: sha256(MODEL_KEY), file: sha256(FILE_TOKEN) });
    const shell = String(stepOf(lines, "shell-stage0").body.result).split("\n");
    expect(shell.slice(0, 5)).toEqual([closed, "65532", expect.stringMatching(/NoNewPrivs:\s+1/), "0", "absent"]);
    expect(stepOf(lines, "read-granted")).toMatchObject({ status: 200, body: { decision: "allow", result: "team notes: ship it\n", label: "private" } });
    expect(stepOf(lines, "read-refused")).toMatchObject({ status: 403, body: { decision: "deny" } });
    expect(String(stepOf(lines, "shell-outbound:outcome").body.result).split("\n")[0]).toBe(open);
    expect(stepOf(lines, "submit-output:result")).toMatchObject({ status: 200, body: { label: "public", taint: "private" } });
    // The same process that was held before the Run existed got the Run, through bound-exec's pipe.
    expect(stepOf(lines, "binding").body).toMatchObject({ run: RUN, env: RUN, startedAt: heldAt });
    const timing = stepOf(lines, "timing").body as { startedAt: number; boundAt: number; firstAnsweredAt: number };
    expect(timing.startedAt).toBeLessThan(createdAt);
    say(`Run created → runtime bound ${timing.boundAt - createdAt} ms (started ${createdAt - timing.startedAt} ms before the Run), → first tool call answered ${timing.firstAnsweredAt - createdAt} ms (shell in the pool's sandbox pod)`);
    const run = await waitForPhase(RUN, ["Succeeded"], 60_000);
    expect(conditionOf(run, "Completed")).toMatchObject({ status: "True", reason: "AgentSucceeded" });
    expect(run.status?.result).toMatchObject({ bytes: 18, sha256: sha256("# digest\nall read\n"), callId: "out-1" });
    expect((await kubectl(["get", "run", RUN, "-n", NS, "-o", "jsonpath={.status.result.inline}"])).stdout).toBe("# digest\nall read\n");
    expect([...answered].sort()).toEqual(["gate-out-1", "gate-sh-1"]);
  });

  it("keeps its audit, the binding's record first, readable with one command after the pod ended", async () => {
    await waitFor(async () => (await getJson<{ status?: { phase?: string } }>(["get", "pod", poolPod, "-n", NS])).status?.phase === "Succeeded",
      { timeoutMs: 30_000, intervalMs: 250, description: "the adopted pod ended" });
    const parsed = parseAudit(await readAuditText(RUN));
    const records = parsed.map((l) => l.leviath_audit.record);
    expect(parsed.every((l) => l.leviath_audit.run === RUN)).toBe(true);
    const bindings = records.filter((r) => r["tool_name"] === "binding");
    expect(bindings).toEqual([expect.objectContaining({ decision: "allow", decision_source: "pool_binding" })]);
    expect(JSON.stringify(records)).not.toContain(MODEL_KEY);
    expect(JSON.stringify(records)).not.toContain(FILE_TOKEN);
    expect(records).toContainEqual(expect.objectContaining({ call_id: "rd-2", decision: "deny", decision_source: "read_path", code: "not-declared" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "submit_output", allowed: true, decision_source: "UserAllowOnce" }));
    for (const id of ["sh-0", "rd-1", "rd-2", "sh-1", "out-1"]) expect(records.some((r) => r["call_id"] === id), id).toBe(true);
  });

  it("refills the pool with a new ready pod", async () => {
    const next = await waitForReadyPoolPod(AGENT, [poolPod]);
    expect(next.metadata.name).not.toBe(poolPod);
    expect((await readyPoolPods(AGENT)).map((p) => p.metadata.name)).not.toContain(poolPod);
    const policy = await waitFor(async () => {
      const p = await getJson<PolicyStatus>(["get", "leviathpolicy", "cluster"]);
      return p.status?.pools?.[0]?.ready === 1 ? p : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the policy's status to count the new ready pool pod" });
    expect(policy.status?.pools?.[0]).toMatchObject({ ready: 1, adoptions: 1 });
  });
});
