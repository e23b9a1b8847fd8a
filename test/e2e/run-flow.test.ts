// The Run flow on the real node (issue 8, steps 1-6): the chart installed with real helm, a policy granting a
// volume-backed read path, an Agent with two stages of different sandbox settings and a Run; the engine pod
// (scripted runtime + sidecar) and both sandbox pods run; the runtime drives the sidecar through grants,
// refusals, shell in the sandbox pods (pods/exec), a gate prompt answered by an Approval made with kubectl,
// and submit_output; then the Run's status, the audit file and the metrics scraped over the pod network;
// deleting the Run takes every child with it.
import { mkdtempSync, chmodSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { helm, kubectl, REPO_ROOT, waitFor } from "../integration/harness/index.ts";
import { execInPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const NS = "leviath-sandbox";
const SYSTEM_NS = "leviath-system";
const RELEASE = "leviath";
const AGENT = "e2e-agent";
const RUN = "e2e-run";
const ALL_ZERO = "0000000000000000";
const CHILD_LABEL = `leviath.dev/run=${RUN}`;

type Line = { step: string; status: number; body: Record<string, unknown> };
type RunObject = { status?: { phase?: string; taint?: { level?: string }; gateDecisions?: Record<string, number>; pendingApprovals?: { id: string }[]; sandboxes?: unknown[] } };

/** image ref → chart values `{repository, tag}` */
function imageValues(ref: string): { repository: string; tag: string } {
  const at = ref.lastIndexOf(":");
  return { repository: ref.slice(0, at), tag: ref.slice(at + 1) };
}

async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse((await kubectl([...args, "-o", "json"])).stdout) as T;
}

async function runtimeLines(): Promise<Line[]> {
  const r = await kubectl(["logs", "-n", NS, `${RUN}-engine`, "-c", "agent"], { allowFailure: true });
  return r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Line);
}

function statusFields(text: string): Record<string, string> {
  return Object.fromEntries(text.split("\n").filter((l) => l.includes(":")).map((l) => {
    const [key, ...rest] = l.split(":");
    return [key!.trim(), rest.join(":").trim()];
  }));
}

const timings: Record<string, number> = {};
const started = performance.now();
const mark = (name: string): void => { timings[name] = Math.round(performance.now() - started) / 1000; };

describe("the Run flow on the real node", () => {
  const operator = node.images["leviath-operator"];
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  let workspaceDir = "";
  let sandboxPods: { name: string; network: string; ip: string }[] = [];
  let lines: Line[] = [];

  beforeAll(async () => {
    if (!operator || !runtime) throw new Error("no leviath-operator/leviath-runtime image: run 'bash scripts/build-images'");
    workspaceDir = mkdtempSync(join(tmpdir(), "leviath-e2e-workspace-"));
    chmodSync(workspaceDir, 0o777);
  });

  afterAll(async () => {
    process.stderr.write(`[e2e run-flow] timings (s since start): ${JSON.stringify(timings)}\n`);
    await kubectl(["delete", "run", RUN, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await helm(["uninstall", RELEASE, "-n", SYSTEM_NS, "--wait", "--timeout", "60s"], { allowFailure: true, timeoutMs: 90_000 });
    await kubectl(["delete", "pv", `${RUN}-workspace`, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    if (workspaceDir) rmSync(workspaceDir, { recursive: true, force: true });
  });

  it("installs the chart with the locally built images and the controller runs", async () => {
    const values = {
      image: { ...imageValues(operator!), pullPolicy: "Never" },
      controller: { replicas: 1, runtimeImage: runtime, podDisruptionBudget: { enabled: false } },
      policy: {
        spec: {
          sandbox: { kind: "container", image: sandbox, onUnavailable: "error" },
          security: { taintTracking: true },
          // Without a ceiling here shell is asked (tool approval); allowing it leaves the taint gate as the
          // only prompt, which is what this flow checks.
          toolPermissions: { shell: "allow", submit_output: "allow" },
          readPaths: {
            perAgent: { [`${NS}/${AGENT}`]: ["/data/team-notes"] },
            volumes: [{ path: "/data/team-notes", volume: { configMap: { name: "team-notes" } } }],
          },
        },
      },
    };
    await helm(["install", RELEASE, join(REPO_ROOT, "charts/leviath-operator"), "-n", SYSTEM_NS, "--create-namespace", "-f", "-"],
      { input: stringify(values), timeoutMs: 120_000 });
    await waitFor(async () => {
      const pods = await getJson<{ items: { status?: { phase?: string } }[] }>(["get", "pods", "-n", SYSTEM_NS]);
      return pods.items.length > 0 && pods.items.every((p) => p.status?.phase === "Running");
    }, { timeoutMs: 120_000, intervalMs: 1000, description: "the controller pod Running" });
    mark("controllerRunning");
  });

  it("runs the engine pod and one sandbox pod per stage sandbox", async () => {
    const objects = [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "team-notes", namespace: NS }, data: { "notes.md": "team notes: ship it\n" } },
      {
        apiVersion: "v1", kind: "PersistentVolume", metadata: { name: `${RUN}-workspace` },
        spec: {
          capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: "",
          hostPath: { path: workspaceDir, type: "Directory" },
          claimRef: { namespace: NS, name: `${RUN}-workspace` },
        },
      },
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT, namespace: NS },
        spec: {
          agent: { name: AGENT, version: "1.0.0", description: "e2e", entryStage: "survey" },
          sandbox: { kind: "container", image: sandbox, network: false, onUnavailable: "error" },
          readPaths: { allow: ["/data/team-notes"] },
          toolPermissions: { read_file: "allow", shell: "allow", submit_output: "allow" },
          stages: [
            { name: "survey", availableTools: ["read_file", "shell"], runtime: { mode: "autonomous", transitions: { digest: { hint: "done" } } } },
            { name: "digest", sandbox: { kind: "container", image: sandbox, network: true }, availableTools: ["shell", "submit_output"], runtime: { mode: "output", transitions: {} } },
          ],
        },
      },
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
        spec: { agentRef: { name: AGENT }, task: "e2e", mode: "interactive", deadlines: { sandboxReadySeconds: 300 } },
      },
    ];
    await kubectl(["apply", "-f", "-"], { input: objects.map((o) => stringify(o)).join("---\n") });
    type PodList = { items: { metadata: { name: string; labels?: Record<string, string> }; status?: { phase?: string; podIP?: string } }[] };
    const pods = await waitFor(async () => {
      const list = await getJson<PodList>(["get", "pods", "-n", NS, "-l", CHILD_LABEL]);
      const running = list.items.filter((p) => p.status?.phase === "Running");
      return list.items.length === 3 && running.length === 3 ? list.items : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000, description: "engine + 2 sandbox pods Running" });
    mark("podsRunning");
    const names = pods.map((p) => p.metadata.name).sort();
    expect(names).toContain(`${RUN}-engine`);
    sandboxPods = pods.filter((p) => p.metadata.name.startsWith(`${RUN}-sbx-`))
      .map((p) => ({ name: p.metadata.name, network: p.metadata.labels?.["leviath.dev/network"] ?? "", ip: p.status?.podIP ?? "" }));
    expect(sandboxPods).toHaveLength(2);
  });

  it("holds the sandbox restrictions inside both sandbox pods", async () => {
    for (const pod of sandboxPods) {
      const status = await execInPod(NS, pod.name, "cat /proc/self/status", "sandbox");
      expect(status.exitCode, status.stderr).toBe(0);
      const f = statusFields(status.stdout);
      expect({ eff: f.CapEff, prm: f.CapPrm, inh: f.CapInh, bnd: f.CapBnd, amb: f.CapAmb })
        .toEqual({ eff: ALL_ZERO, prm: ALL_ZERO, inh: ALL_ZERO, bnd: ALL_ZERO, amb: ALL_ZERO });
      expect(f.NoNewPrivs).toBe("1");
      expect(f.Uid?.split(/\s+/)).toEqual(["65532", "65532", "65532", "65532"]);
      const ro = await execInPod(NS, pod.name, "touch /home/sandbox/x 2>&1; echo rc=$?", "sandbox");
      expect(ro.stdout).toMatch(/Read-only file system/);
      // The bridge CNI does not enforce NetworkPolicy (docs/real-node.md): what holds is that no route to
      // the outside exists, for network=false and (on this node) every other pod too.
      const route = await execInPod(NS, pod.name, "ip route; ip route get 198.51.100.7 2>&1; true", "sandbox");
      expect(route.stdout).not.toMatch(/^default /m);
      expect(route.stdout).toMatch(/Network is unreachable/);
    }
    expect(sandboxPods.map((p) => p.network).sort()).toContain("none");
    const isolate = await kubectl(["get", "networkpolicy", `${RUN}-isolate`, "-n", NS], { allowFailure: true });
    expect(isolate.exitCode, isolate.stderr).toBe(0);
  });

  it("drives the scripted runtime through the sidecar, answering the gate with kubectl-made Approvals", async () => {
    const answered = new Set<string>();
    lines = await waitFor(async () => {
      const run = await getJson<RunObject>(["get", "run", RUN, "-n", NS]);
      for (const p of run.status?.pendingApprovals ?? []) {
        if (answered.has(p.id)) continue;
        const approval = {
          apiVersion: "leviath.dev/v1alpha1", kind: "Approval",
          metadata: { name: `e2e-${answered.size}`, namespace: NS },
          spec: { runRef: { name: RUN }, approvalId: p.id, decision: "allowOnce", reason: "e2e" },
        };
        await kubectl(["create", "-f", "-"], { input: stringify(approval) });
        answered.add(p.id);
        mark(`approved:${p.id}`);
      }
      const got = await runtimeLines();
      return got.some((l) => l.step === "done") ? got : undefined;
    }, { timeoutMs: 150_000, intervalMs: 1000, description: "the runtime's 'done' line" });
    mark("runtimeDone");
    process.stderr.write(`[e2e run-flow] runtime:\n${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    const step = (name: string): Line => {
      const l = lines.find((x) => x.step === name);
      if (!l) throw new Error(`no '${name}' line`);
      return l;
    };
    const sh0 = step("shell-stage0");
    expect(sh0.status).toBe(200);
    expect(sh0.body.decision).toBe("allow");
    const sh0Out = String(sh0.body.result).split("\n");
    // Executed in the stage's sandbox pod (its hostname is the pod name), as 65532, with NoNewPrivs.
    expect(sandboxPods.map((p) => p.name)).toContain(sh0Out[0]);
    expect(sh0Out[1]).toBe("65532");
    expect(sh0Out[2]).toMatch(/NoNewPrivs:\s+1/);
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

  it("reports the Run's status, the audit file and the sidecar metrics over the pod network", async () => {
    const run = await waitFor(async () => {
      const r = await getJson<RunObject>(["get", "run", RUN, "-n", NS]);
      return (r.status?.gateDecisions?.user_allow_once ?? 0) >= 1 && (r.status?.pendingApprovals ?? []).length === 0 ? r : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "the Run status with the approval counted" });
    process.stderr.write(`[e2e run-flow] run status: ${JSON.stringify(run.status)}\n`);
    expect(run.status?.phase).toBe("Running");
    expect(run.status?.taint?.level).toBe("private");
    expect(run.status?.gateDecisions).toMatchObject({ read_path: 1, user_allow_once: 2 });
    expect(run.status?.gateDecisions?.auto_block ?? 0).toBeGreaterThanOrEqual(2);

    const audit = await execInPod(NS, `${RUN}-engine`, `cat /tmp/.leviath/runs/${RUN}/stages/*/taint_audit.jsonl /tmp/.leviath/runs/${RUN}/stages/*/decisions.jsonl`, "sidecar");
    process.stderr.write(`[e2e run-flow] audit:\n${audit.stdout}${audit.stderr}\n`);
    const records = audit.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
    // upstream's taint_audit records: the gate's block and the person's allow-once, for both outbound calls
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "submit_output", allowed: true, decision_source: "UserAllowOnce" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "shell", allowed: false, decision_source: "AutoBlock" }));
    // decisions.jsonl: the refused read with its code and path
    expect(records).toContainEqual(expect.objectContaining({ call_id: "rd-2", decision: "deny", decision_source: "read_path", code: "not-declared" }));

    const engine = await getJson<{ status?: { podIP?: string } }>(["get", "pod", `${RUN}-engine`, "-n", NS]);
    const res = await fetch(`http://${engine.status?.podIP}:9090/metrics`);
    expect(res.status).toBe(200);
    const metrics = await res.text();
    expect(metrics).toMatch(/^leviath_sidecar_\w+/m);
    expect(metrics).toMatch(/leviath_sidecar_shell_commands_total\{[^}]*\} [1-9]/);
    mark("statusChecked");
  });

  it("deletes every child with the Run", async () => {
    await kubectl(["delete", "run", RUN, "-n", NS, "--wait=false"]);
    await waitFor(async () => {
      const kinds = "pods,configmaps,persistentvolumeclaims,serviceaccounts,roles,rolebindings,networkpolicies";
      const left = await getJson<{ items: unknown[] }>(["get", kinds, "-n", NS, "-l", CHILD_LABEL]);
      const run = await kubectl(["get", "run", RUN, "-n", NS], { allowFailure: true });
      return left.items.length === 0 && run.exitCode !== 0;
    }, { timeoutMs: 120_000, intervalMs: 1000, description: "every child of the Run gone" });
    mark("childrenGone");
  });
});
