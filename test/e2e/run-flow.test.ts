// The Run flow on the real node: the chart installed with real helm, a policy granting a volume-backed read
// path, an Agent with two stages of different sandbox settings and a Run with credential Secrets; the engine
// pod (scripted runtime + native sidecar) and both sandbox pods run; the credentials reach the agent container
// and no sandbox pod (checked from inside); the runtime drives the sidecar through grants, refusals, shell in
// the sandbox pods (pods/exec), gate prompts answered by Approvals made with kubectl, and submit_output, then
// exits; the Run goes to Succeeded by itself, its result readable from the Run, its sandbox pods, Role and
// NetworkPolicy gone, its full audit readable with one kubectl command. A Run whose agent exits 3 ends Failed
// with the code in its condition; a Run past its deadline ends Failed/DeadlineExceeded and is torn down.
// Deleting a Run takes every child with it.
import { createHash } from "node:crypto";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubectl, kubectlLeviath, waitFor } from "../integration/harness/index.ts";
import { buildCredentialSecret, buildFlowAgent, buildFlowPolicySpec, TEAM_NOTES } from "./harness/flow-objects.ts";
import { getJson } from "./harness/kube-json.ts";
import { sidecarScrapeToken } from "./harness/metrics-access.ts";
import {
  applyObjects, buildApproval, cleanUp, conditionOf, getRun, installOperator, NS, parseAudit,
  readAuditText, RELEASE, runtimeLines as linesOf, sidecarAuditLines, SYSTEM_NS, waitForPhase, waitForRunPods, type RuntimeLine,
} from "./harness/operator-fixture.ts";
import { credentialTraces, HARDENED, readHardening } from "./harness/pod-checks.ts";
import { execInPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "e2e-agent";
const RUN = "e2e-run";
const SMALL_AGENT = "e2e-small";
const FAIL_RUN = "e2e-fail";
const DEADLINE_RUN = "e2e-deadline";
const CHILD_LABEL = `leviath.dev/run=${RUN}`;
const MODEL_KEY = "sk-e2e-model-key-value";
const FILE_TOKEN = "file-token-value";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

type Line = RuntimeLine;
const runtimeLines = (run = RUN): Promise<Line[]> => linesOf(run);

const timings: Record<string, number> = {};
const started = performance.now();
const mark = (name: string): void => { timings[name] = Math.round(performance.now() - started) / 1000; };

describe("the Run flow on the real node", () => {
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  let sandboxPods: { name: string; network: string; ip: string }[] = [];
  let lines: Line[] = [];

  beforeAll(async () => {
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
  });

  afterAll(async () => {
    process.stderr.write(`[e2e run-flow] timings (s since start): ${JSON.stringify(timings)}\n`);
    await cleanUp([RUN, FAIL_RUN, DEADLINE_RUN]);
  });

  it("installs the chart with the locally built images and the controller runs", async () => {
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: { spec: buildFlowPolicySpec(sandbox, AGENT) },
    });
    mark("controllerRunning");
  });

  it("runs the engine pod and one sandbox pod per stage sandbox", async () => {
    const objects = [
      TEAM_NOTES,
      buildCredentialSecret("e2e-model-key", { E2E_MODEL_KEY: MODEL_KEY }),
      buildCredentialSecret("e2e-files", { token: FILE_TOKEN }),
      buildFlowAgent(AGENT, sandbox, "e2e"),
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
        spec: {
          agentRef: { name: AGENT }, task: "e2e", mode: "interactive", deadlines: { sandboxReadySeconds: 300 },
          credentials: [{ secretName: "e2e-model-key" }, { secretName: "e2e-files", as: "files" }],
          runtime: { e2e: { credentialFile: "/var/run/leviath/credentials/e2e-files/token" } },
        },
      },
    ];
    await applyObjects(objects);
    const pods = await waitForRunPods(RUN, 3);
    mark("podsRunning");
    const names = pods.map((p) => p.metadata.name).sort();
    expect(names).toContain(`${RUN}-engine`);
    sandboxPods = pods.filter((p) => p.metadata.name.startsWith(`${RUN}-sbx-`))
      .map((p) => ({ name: p.metadata.name, network: p.metadata.labels?.["leviath.dev/network"] ?? "", ip: p.status?.podIP ?? "" }));
    expect(sandboxPods).toHaveLength(2);
  });

  it("holds the sandbox restrictions inside both sandbox pods", async () => {
    for (const pod of sandboxPods) {
      expect(await readHardening(NS, pod.name, "sandbox")).toEqual(HARDENED);
      const ro = await execInPod(NS, pod.name, "touch /home/sandbox/x 2>&1; echo rc=$?", "sandbox");
      expect(ro.stdout).toMatch(/Read-only file system/);
      // The bridge CNI does not enforce NetworkPolicy (docs/real-node.md): what holds is that no route to
      // the outside exists, for network=false and (on this node) every other pod too.
      const route = await execInPod(NS, pod.name, "ip route; ip route get 198.51.100.7 2>&1; true", "sandbox");
      expect(route.stdout).not.toMatch(/^default /m);
      expect(route.stdout).toMatch(/Network is unreachable/);
      // No credential in a sandbox pod: not in the environment of its processes, not as a file, not mounted.
      expect(await credentialTraces(NS, pod.name, "sandbox", "E2E_MODEL_KEY", FILE_TOKEN)).toEqual(["0", "absent", "0", "0"]);
    }
    expect(sandboxPods.map((p) => p.network).sort()).toContain("none");
    const isolate = await kubectl(["get", "networkpolicy", `${RUN}-isolate`, "-n", NS], { allowFailure: true });
    expect(isolate.exitCode, isolate.stderr).toBe(0);
    // The sidecar holds no credential either (its environment is its own).
    const sidecarEnv = await execInPod(NS, `${RUN}-engine`, "cat /proc/1/environ | tr '\\0' '\\n' | grep -c E2E_MODEL_KEY; test -e /var/run/leviath && echo present || echo absent", "sidecar");
    expect(sidecarEnv.stdout.split("\n").slice(0, 2)).toEqual(["0", "absent"]);
  });

  it("drives the scripted runtime through the sidecar, answering the gate with kubectl-made Approvals, until it exits", async () => {
    const answered = new Set<string>();
    let scraped = false;
    lines = await waitFor(async () => {
      const run = await getRun(RUN);
      for (const p of run.status?.pendingApprovals ?? []) {
        if (answered.has(p.id)) continue;
        if (p.id === "gate-out-1" && !scraped) {
          // The last prompt: while the engine pod still runs, its metrics over the pod network.
          await checkMetrics();
          scraped = true;
        }
        await kubectl(["create", "-f", "-"], { input: stringify(buildApproval(`e2e-${answered.size}`, RUN, p.id, "e2e")) });
        answered.add(p.id);
        mark(`approved:${p.id}`);
      }
      const got = await runtimeLines();
      return got.some((l) => l.step === "done") ? got : undefined;
    }, { timeoutMs: 150_000, intervalMs: 1000, description: "the runtime's 'done' line" });
    mark("runtimeDone");
    expect(scraped).toBe(true);
    process.stderr.write(`[e2e run-flow] runtime:\n${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    const step = (name: string): Line => {
      const l = lines.find((x) => x.step === name);
      if (!l) throw new Error(`no '${name}' line`);
      return l;
    };
    expect(step("config").body).toMatchObject({ task: "e2e", mode: "interactive", stages: ["survey", "digest"], scenario: "flow" });
    // The credentials reached the agent container (the runtime reports their hashes, never the values).
    expect(step("credentials").body).toEqual({ env: sha256(MODEL_KEY), file: sha256(FILE_TOKEN) });
    const sh0 = step("shell-stage0");
    expect(sh0.status).toBe(200);
    expect(sh0.body.decision).toBe("allow");
    const sh0Out = String(sh0.body.result).split("\n");
    // Executed in the stage's sandbox pod (its hostname is the pod name), as 65532, with NoNewPrivs, and with
    // no credential in its environment or on its filesystem.
    expect(sandboxPods.map((p) => p.name)).toContain(sh0Out[0]);
    expect(sh0Out[1]).toBe("65532");
    expect(sh0Out[2]).toMatch(/NoNewPrivs:\s+1/);
    expect(sh0Out[3]).toBe("0");
    expect(sh0Out[4]).toBe("absent");
    expect(step("read-granted")).toMatchObject({ status: 200, body: { decision: "allow", result: "team notes: ship it\n", label: "private" } });
    expect(step("read-refused")).toMatchObject({ status: 403, body: { decision: "deny" } });
    const asked = step("shell-outbound");
    expect(asked.status).toBe(202);
    expect(asked.body.decision).toBe("ask");
    const outcome = step("shell-outbound:outcome");
    expect(outcome.body.decision).toBe("allow");
    const sh1Out = String(outcome.body.result).split("\n");
    expect(sandboxPods.map((p) => p.name)).toContain(sh1Out[0]);
    expect(sh1Out[0]).not.toBe(sh0Out[0]);
    expect(sh1Out[1]).toBe("outbound");
    expect(asked.body.approval).toMatchObject({ kind: "taint_gate", tool: "shell", stage: "digest" });
    // submit_output is outbound at public clearance: after the private read the gate asks for it too.
    expect(step("submit-output")).toMatchObject({ status: 202, body: { decision: "ask", approval: { kind: "taint_gate" } } });
    expect(step("submit-output:outcome")).toMatchObject({ status: 200, body: { decision: "run" } });
    expect(step("submit-output:result")).toMatchObject({ status: 200, body: { label: "public", taint: "private" } });
    expect([...answered].sort()).toEqual(["gate-out-1", "gate-sh-1"]);
  });

  async function checkMetrics(): Promise<void> {
    const engine = await getJson<{ status?: { podIP?: string } }>(["get", "pod", `${RUN}-engine`, "-n", NS]);
    const url = `http://${engine.status?.podIP}:9090/metrics`;
    // Over the pod network, as the chart's PodMonitor scrapes it: only with the controller's scrape token.
    const token = await sidecarScrapeToken(RELEASE, SYSTEM_NS);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    for (const refused of [{}, { authorization: `Bearer ${sha256(token)}` }, { authorization: `Bearer ${"f".repeat(64)}` }]) {
      const r = await fetch(url, { headers: refused });
      expect(r.status).toBe(401);
      expect(await r.text()).not.toContain("leviath_sidecar_");
    }
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const metrics = await res.text();
    expect(metrics).toMatch(/^leviath_sidecar_\w+/m);
    expect(metrics).toMatch(/leviath_sidecar_shell_commands_total\{[^}]*\} [1-9]/);
    mark("metricsScraped");
  }

  it("goes to Succeeded by itself, with its result on the Run and its sandbox pods, Role and NetworkPolicy gone", async () => {
    const run = await waitForPhase(RUN, ["Succeeded"], 60_000);
    mark("succeeded");
    process.stderr.write(`[e2e run-flow] run status: ${JSON.stringify(run.status)}\n`);
    expect(run.status?.agentExit).toMatchObject({ exitCode: 0 });
    expect(conditionOf(run, "Completed")).toMatchObject({ status: "True", reason: "AgentSucceeded" });
    expect(run.status?.taint?.level).toBe("private");
    expect(run.status?.gateDecisions).toMatchObject({ read_path: 1, user_allow_once: 2 });
    expect(run.status?.gateDecisions?.auto_block ?? 0).toBeGreaterThanOrEqual(2);
    expect(run.status?.pendingApprovals ?? []).toEqual([]);
    // The result, as docs/runtime.md says to read it.
    const result = await kubectl(["get", "run", RUN, "-n", NS, "-o", "jsonpath={.status.result.inline}"]);
    expect(result.stdout).toBe("# digest\nall read\n");
    expect(run.status?.result).toMatchObject({ bytes: 18, sha256: sha256("# digest\nall read\n"), callId: "out-1" });
    await waitFor(async () => {
      const left = await getJson<{ items: { kind: string; metadata: { name: string } }[] }>(["get", "pods,roles,rolebindings,networkpolicies,serviceaccounts", "-n", NS, "-l", CHILD_LABEL]);
      return left.items.length === 1 && left.items[0]!.metadata.name === `${RUN}-engine`;
    }, { timeoutMs: 30_000, intervalMs: 250, description: "sandbox pods, Role, RoleBinding, ServiceAccount and NetworkPolicy gone" });
    mark("tornDown");
    const engine = await getJson<{ status?: { phase?: string } }>(["get", "pod", `${RUN}-engine`, "-n", NS]);
    expect(engine.status?.phase).toBe("Succeeded");
    // What a user's kubectl says of it: Ready (kstatus: Current), and the story in its Events.
    const waited = await kubectl(["wait", "-n", NS, "--for=condition=Ready", `run/${RUN}`, "--timeout=30s"]);
    expect(waited.stdout).toContain(`run.leviath.dev/${RUN} condition met`);
    const events = await getJson<{ items: { type: string; reason: string }[] }>(["get", "events", "-n", NS, "--field-selector", `involvedObject.kind=Run,involvedObject.name=${RUN}`]);
    const reasons = events.items.map((e) => e.reason);
    expect(reasons).toContain("Running");
    expect(reasons).toContain("AgentSucceeded");
    expect(reasons.indexOf("Running")).toBeLessThan(reasons.indexOf("AgentSucceeded"));
  });

  it("keeps its full audit readable with one command after the pod ended, and on the sidecar's stdout", async () => {
    // docs/operations.md: the audit ConfigMaps, in order.
    const text = await readAuditText(RUN);
    const parsed = parseAudit(text);
    process.stderr.write(`[e2e run-flow] audit: ${parsed.length} records\n`);
    const records = parsed.map((l) => l.leviath_audit.record);
    expect(parsed.every((l) => l.leviath_audit.run === RUN)).toBe(true);
    // upstream's taint_audit records: the gate's block and the person's allow-once, for both outbound calls
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "submit_output", allowed: true, decision_source: "UserAllowOnce" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "shell", allowed: false, decision_source: "AutoBlock" }));
    // decisions.jsonl: the refused read with its code and path, and every call's decision
    expect(records).toContainEqual(expect.objectContaining({ call_id: "rd-2", decision: "deny", decision_source: "read_path", code: "not-declared" }));
    for (const id of ["sh-0", "rd-1", "rd-2", "sh-1", "out-1"]) expect(records.some((r) => r["call_id"] === id)).toBe(true);
    expect([...new Set(parsed.map((l) => l.leviath_audit.file))]).toEqual(expect.arrayContaining(["stages/0/decisions.jsonl", "stages/1/taint_audit.jsonl", "stages/1/decisions.jsonl"]));
    // The same lines on the sidecar's stdout, for the cluster's log pipeline.
    expect(await sidecarAuditLines(RUN)).toEqual(text.split("\n").filter((l) => l.startsWith("{")));
  });

  it("ends Failed with the agent's exit code, reason and message when the agent exits non-zero, and is torn down", async () => {
    await applyObjects([smallAgent(), {
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: FAIL_RUN, namespace: NS },
      spec: { agentRef: { name: SMALL_AGENT }, task: "fail", runtime: { e2e: { scenario: "fail", exitCode: 3 } } },
    }]);
    // A user waiting with the plugin from the start: it returns when the Run ends, with status 1 as it Failed.
    const waiting = kubectlLeviath(["wait", FAIL_RUN, "-n", NS, "--timeout", "170s"], { allowFailure: true, timeoutMs: 180_000 });
    const run = await waitForPhase(FAIL_RUN, ["Failed"]);
    mark("failRunFailed");
    const waited = await waiting;
    expect(waited.exitCode, waited.stderr).toBe(1);
    expect(waited.stdout).toBe(`run.leviath.dev/${FAIL_RUN} Failed: the agent container exited with code 3 (Error): e2e: failing on purpose with exit code 3\n`);
    expect((await kubectlLeviath(["wait", FAIL_RUN, "--for", "Failed", "-n", NS])).exitCode).toBe(0);
    expect(run.status?.agentExit).toEqual({ exitCode: 3, reason: "Error", message: "e2e: failing on purpose with exit code 3" });
    expect(conditionOf(run, "Completed")).toMatchObject({
      status: "True", reason: "AgentFailed", message: "the agent container exited with code 3 (Error): e2e: failing on purpose with exit code 3",
    });
    await waitForNoSandboxPods(FAIL_RUN);
  });

  it("ends Failed with DeadlineExceeded past spec.deadlines.activeDeadlineSeconds, and is torn down", async () => {
    await applyObjects([{
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: DEADLINE_RUN, namespace: NS },
      spec: { agentRef: { name: SMALL_AGENT }, task: "wait", deadlines: { activeDeadlineSeconds: 30 }, runtime: { e2e: { scenario: "wait", tool: "send_email" } } },
    }]);
    // Waiting for a person nobody sends: the prompt is on the Run while it runs.
    await waitFor(async () => ((await getRun(DEADLINE_RUN)).status?.pendingApprovals ?? []).length === 1,
      { timeoutMs: 60_000, intervalMs: 500, description: "the deadline Run waiting for an approval" });
    const run = await waitForPhase(DEADLINE_RUN, ["Failed"], 90_000);
    mark("deadlineRunFailed");
    expect(conditionOf(run, "Completed")).toMatchObject({ status: "True", reason: "DeadlineExceeded" });
    expect(run.status?.agentExit).toBeUndefined();
    await waitFor(async () => {
      const left = await getJson<{ items: unknown[] }>(["get", "pods,roles,rolebindings", "-n", NS, "-l", `leviath.dev/run=${DEADLINE_RUN}`]);
      return left.items.length === 0;
    }, { timeoutMs: 60_000, intervalMs: 250, description: "every pod of the deadline Run gone (the engine pod too)" });
    // The sidecar flushed its audit on the way out: the pending prompt's refusal is in it.
    const text = await readAuditText(DEADLINE_RUN);
    expect(text).toMatch(/"call_id":"wait-1"/);
  });

  async function waitForNoSandboxPods(run: string): Promise<void> {
    await waitFor(async () => {
      const left = await getJson<{ items: unknown[] }>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${run},leviath.dev/component=sandbox`]);
      return left.items.length === 0;
    }, { timeoutMs: 30_000, intervalMs: 250, description: `the sandbox pods of ${run} gone` });
  }

  function smallAgent(): Record<string, unknown> {
    return {
      apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: SMALL_AGENT, namespace: NS },
      spec: {
        agent: { name: SMALL_AGENT, version: "1.0.0", description: "e2e small" },
        sandbox: { kind: "container", image: sandbox, network: true, onUnavailable: "error" },
        // Spelled out, so the stage offers it (a name nobody names is [unavailable]); asked, so it waits for a person.
        toolPermissions: { send_email: "ask" },
        stages: [{ name: "main" }],
      },
    };
  }

  it("deletes every child with the Run", async () => {
    await kubectl(["delete", "run", RUN, "-n", NS, "--wait=false"]);
    await waitFor(async () => {
      const kinds = "pods,configmaps,persistentvolumeclaims,serviceaccounts,roles,rolebindings,networkpolicies";
      const left = await getJson<{ items: unknown[] }>(["get", kinds, "-n", NS, "-l", CHILD_LABEL]);
      const run = await kubectl(["get", "run", RUN, "-n", NS], { allowFailure: true });
      return left.items.length === 0 && run.exitCode !== 0;
    }, { timeoutMs: 120_000, intervalMs: 1000, description: "every child of the Run gone (the sidecar's result and audit ConfigMaps too)" });
    mark("childrenGone");
  });
});
