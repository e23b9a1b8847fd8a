// `kubectl leviath` (bin/kubectl-leviath on PATH, run by the real kubectl) against the real API server, the
// controller and a real cluster-mode sidecar answering from its Run's approval relay: the prompts the sidecar
// reports are listed; approve creates the Approval that answers the right one (the sidecar's audit shows the call
// allowed with the reason given) and waits for its outcome; an unknown or ambiguous prompt creates no Approval;
// audit prints the sidecar's records from the Run's ConfigMaps; result prints what the sidecar wrote (inline, or
// from its result ConfigMap); wait times out naming the phase (its terminal phases: the e2e tests on the real node).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../src/api/run-policy.ts";
import { createSidecarClient, type SidecarClient } from "../../src/runtime/sidecar-client.ts";
import { makeTempDir, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { applySidecarIdentity, createTestRun, startApprovalCluster, type ApprovalCluster } from "./approval-cluster.ts";
import { findBinary, kubectl, kubectlLeviath, kubectlLeviathEnv, testCluster, waitFor } from "./harness/index.ts";
import { createSandboxPod, readDecisionRecords, SIDECAR_RUN_POLICY, startClusterSidecar, writeServiceAccountKubeconfig, writeSidecarKubeconfig } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const RUN = "ask-run";
let cluster: ApprovalCluster | undefined;
let namespace = "";
let sc: SidecarProcess | undefined;
/**
 * The fixtures' run policy with a stage that names its tools: web_fetch (an ask by default) is offered only where
 * something names it, as the HTTP tools reach the network from the sidecar itself.
 */
const PLUGIN_RUN_POLICY = RunPolicySchema.parse({ ...SIDECAR_RUN_POLICY, stages: SIDECAR_RUN_POLICY.stages.map((st) => ({ ...st, availableTools: ["read_file", "shell", "submit_output", "web_fetch"] })) });
let client: SidecarClient;
let auditDir = "";
let root = "";

type Result = { code: number; stdout: string; stderr: string };

/** `kubectl leviath <args>` with the real kubectl, the plugin found on PATH and the test cluster as KUBECONFIG. */
async function plugin(args: string[], timeoutMs = 60_000): Promise<Result> {
  const r = await kubectlLeviath(args, { allowFailure: true, timeoutMs });
  return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

/**
 * `kubectl leviath pending --watch` in the background; `until(done)` ends it once its output satisfies `done` (or
 * after 90 s, a loaded machine's worst) and gives that output. A fixed run time cut the watch short under load.
 */
function watchPending(args: string[]): { until: (done: (out: string) => boolean) => Promise<string> } {
  const cluster = testCluster();
  const child = spawn(findBinary("kubectl", cluster.binDir)!, ["leviath", "pending", "--watch", ...args], { env: kubectlLeviathEnv(cluster), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return {
    async until(done) {
      await waitFor(() => done(out), { timeoutMs: 90_000, description: `kubectl leviath pending --watch to print what the test waits for; it printed:\n${out}` }).catch(() => undefined);
      child.kill("SIGTERM");
      await closed;
      return out;
    },
  };
}

const listApprovals = async () => ((await testCluster().custom.listNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals" })) as { items: { metadata: { name: string }; spec: Record<string, unknown> }[] }).items;
const pendingIds = async () => {
  const run = (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: { pendingApprovals?: { id: string }[] } };
  return (run.status?.pendingApprovals ?? []).map((p) => p.id).sort();
};
/** Waits until the sidecar reported exactly `ids` as pending on the Run's status. */
const waitForPending = (ids: string[]) => waitFor(async () => (JSON.stringify(await pendingIds()) === JSON.stringify(ids) ? true : undefined), { description: `pending prompts ${ids.join(", ")} on the Run` });

beforeAll(async () => {
  cluster = await startApprovalCluster("kplugin");
  namespace = cluster.namespace;
  const uid = await createTestRun(namespace, RUN);
  await applySidecarIdentity(namespace, RUN, uid, [await createSandboxPod(namespace, RUN)]);
  root = makeTempDir("leviath-kubectl-plugin-");
  ({ sc, auditDir } = await startClusterSidecar(root, RUN, namespace, await writeSidecarKubeconfig(root, namespace, RUN), ["--exec-wait-seconds", "2"], {}, PLUGIN_RUN_POLICY));
  // Its deadline is how long a prompt waits before the sidecar withdraws it: longer than a loaded machine takes between tests.
  client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 180_000 });
}, 120_000);

afterAll(() => cluster?.stop(sc));

describe("kubectl leviath", () => {
  it("is found by kubectl on PATH; unknown commands and flags are usage errors (exit 2), --help tells the commands", async () => {
    const help = await plugin(["--help"]);
    expect(help.code).toBe(0);
    for (const c of ["pending", "approve", "audit", "result", "wait", "why", "describe"]) expect(help.stdout).toContain(`  ${c} `);
    expect((await plugin(["approve", "--help"])).stdout).toContain("--once");
    const unknown = await plugin(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    const flag = await plugin(["pending", "--bogus"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("'--bogus'");
    expect((await plugin(["approve", RUN, "x", "-n", namespace])).code).toBe(2);
  });

  it("lists the prompts the sidecar reports, in the namespace and with -A", async () => {
    expect(await client.callTool({ id: "r1", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "allow" });
    expect(await client.callTool({ id: "s1", tool: "shell", args: { command: "true" } })).toMatchObject({ decision: "ask", approvalId: "gate-s1" });
    await waitForPending(["gate-s1"]);
    const here = await plugin(["pending", "-n", namespace]);
    expect(here.code, here.stderr).toBe(0);
    expect(here.stdout).toMatch(/^NAMESPACE\s+RUN\s+ID\s+KIND\s+TOOL\s+STAGE\s+AGE\s+PROMPT$/m);
    expect(here.stdout).toMatch(new RegExp(`^${namespace}\\s+${RUN}\\s+gate-s1\\s+taint_gate\\s+shell\\s+main\\s+\\d+[sm]\\s+\\S`, "m"));
    expect((await plugin(["pending", "-A"])).stdout).toContain("gate-s1");
    const empty = await plugin(["pending", "-n", "default"]);
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain("No pending prompts in namespace default.");
  });

  it("refuses a prompt that is not pending, and a choice among several, creating no Approval", async () => {
    const unknown = await plugin(["approve", RUN, "gate-nope", "--once", "-n", namespace]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("prompt 'gate-nope' is not pending on run 'ask-run' (pending: gate-s1); no Approval created");
    expect(await client.callTool({ id: "s2", tool: "shell", args: { command: "true" } })).toMatchObject({ decision: "ask", approvalId: "gate-s2" });
    await waitForPending(["gate-s1", "gate-s2"]);
    const ambiguous = await plugin(["approve", RUN, "--once", "-n", namespace]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/has 2 pending prompts; name one:\nID .*\ngate-s1 .*\ngate-s2 /);
    const missing = await plugin(["approve", "no-such-run", "--once", "-n", namespace]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`run 'no-such-run' not found in namespace '${namespace}'`);
    expect(await listApprovals()).toEqual([]);
  });

  it("answers the chosen prompt with an Approval and reports that the sidecar applied it", async () => {
    // `pending --watch` runs meanwhile: it prints both prompts, then again without the answered one.
    const watching = watchPending(["-n", namespace]);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const r = await plugin(["approve", RUN, "gate-s1", "--once", "--reason", "a listing is fine", "-n", namespace]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^approval\\.leviath\\.dev/${RUN}-[a-z0-9]{5} created: allowOnce for prompt 'gate-s1' of run '${RUN}'\\napplied: allowOnce\\n$`));
    const [approval] = await listApprovals();
    expect(approval?.spec).toMatchObject({ runRef: { name: RUN }, approvalId: "gate-s1", decision: "allowOnce", reason: "a listing is fine" });
    expect(await client.waitForCall("s1", "shell", 60)).toMatchObject({ decision: "allow" });
    expect(readDecisionRecords(auditDir)).toContainEqual(expect.objectContaining({ call_id: "s1", tool_name: "shell", decision: "allow", approval_reason: "a listing is fine" }));
    await waitForPending(["gate-s2"]);
    const lastTable = (out: string) => out.split(/\n(?=NAMESPACE )/).at(-1) ?? "";
    const tables = (await watching.until((out) => !lastTable(out).includes("gate-s1") && lastTable(out).includes("gate-s2"))).split(/\n(?=NAMESPACE )/);
    expect(tables.length, tables.join("\n---\n")).toBeGreaterThanOrEqual(2);
    expect(tables[0]).toMatch(/gate-s1[\s\S]*gate-s2/);
    expect(tables.at(-1)).not.toContain("gate-s1");
    expect(tables.at(-1)).toContain("gate-s2");

    // With one prompt left it may be named or not; a deny is applied too (the call is refused).
    const deny = await plugin(["approve", RUN, "--deny", "-n", namespace]);
    expect(deny.code, deny.stderr).toBe(0);
    expect(deny.stdout).toContain("applied: deny");
    expect(await client.waitForCall("s2", "shell", 60)).toMatchObject({ decision: "deny" });

    // A second answer to the same prompt is refused before anything is created, whether the Run's status still
    // lists the prompt (the first Approval is named) or no longer does.
    const before = (await listApprovals()).length;
    const again = await plugin(["approve", RUN, "gate-s2", "--once", "-n", namespace]);
    expect(again.code, again.stdout).toBe(1);
    expect(again.stderr).toMatch(/prompt 'gate-s2' (of run '[^']+' is already answered by approval\.leviath\.dev\/\S+ \(deny, applied: deny|is not pending on run)/);
    expect(again.stderr).toContain("no Approval created");
    expect(await listApprovals()).toHaveLength(before);
  });

  it("prints the Run's audit records from its ConfigMaps, as a table and as the stored lines", async () => {
    const lines = await waitFor(async () => {
      const r = await plugin(["audit", RUN, "-o", "json", "-n", namespace]);
      expect(r.code, r.stderr).toBe(0);
      const parsed = r.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { leviath_audit: { run: string; file: string; record: Record<string, unknown> } });
      return parsed.some((l) => l.leviath_audit.record["call_id"] === "s2" && l.leviath_audit.record["decision"] === "deny") ? parsed : undefined;
    }, { description: "the audit ConfigMaps to hold the denied call" });
    expect(lines.every((l) => l.leviath_audit.run === RUN)).toBe(true);
    const calls = lines.map((l) => l.leviath_audit.record).filter((r) => r["call_id"] === "s1" && r["decision"] === "allow");
    expect(calls).toContainEqual(expect.objectContaining({ tool_name: "shell", approval_reason: "a listing is fine" }));
    const table = await plugin(["audit", RUN, "-n", namespace]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^TIME\s+FILE\s+TOOL\s+DECISION\s+SOURCE\s+DETAIL$/m);
    expect(table.stdout).toMatch(/^\S+Z\s+stages\/\S+\s+shell\s+allow\s+\S+\s+.*call_id=s1\b.*approval_reason=a listing is fine/m);
    expect((await plugin(["audit", RUN, "-o", "yaml", "-n", namespace])).code).toBe(2);
    // One row per call: s1 was asked, answered by a person, then allowed; its records read as one story.
    const story = await plugin(["audit", RUN, "-o", "calls", "-n", namespace]);
    expect(story.code, story.stderr).toBe(0);
    expect(story.stdout).toMatch(/^TIME\s+CALL\s+TOOL\s+DECISION\s+STORY$/m);
    const s1 = story.stdout.split("\n").filter((l) => /^\S+Z\s+s1\s/.test(l));
    expect(s1).toHaveLength(1);
    expect(s1[0]).toMatch(/\s+shell\s+allow\s+permission ask \(\S+\) → .*allow \(user_allow_once\)/);
  });

  it("follows the audit with -f: the records written so far, then each one the sidecar appends, once", async () => {
    // This Run never ends here (no kubelet), so -f runs until its process's timeout; ending on a terminal phase is
    // src/cli/kubectl/audit.test.ts's.
    const following = plugin(["audit", RUN, "-f", "-o", "json", "-n", namespace], 40_000);
    expect(await client.callTool({ id: "f1", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "allow" });
    await waitFor(async () => ((await plugin(["audit", RUN, "-o", "json", "-n", namespace])).stdout.includes('"call_id":"f1"') ? true : undefined), { description: "call f1 in the audit ConfigMaps" });
    const followed = await following;
    const ids = followed.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { leviath_audit: { file: string; record: Record<string, unknown> } }).leviath_audit);
    const once = await plugin(["audit", RUN, "-o", "json", "-n", namespace]);
    expect(followed.stdout, followed.stderr).toBe(once.stdout.slice(0, followed.stdout.length));
    expect(ids.some((l) => l.record["call_id"] === "s1")).toBe(true);
    expect(ids.filter((l) => l.record["call_id"] === "f1" && l.file.endsWith("decisions.jsonl")).length).toBeGreaterThan(0);
  }, 90_000);

  it("prints the result the sidecar wrote, and says when there is none", async () => {
    const none = await plugin(["result", RUN, "-n", namespace]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`run '${RUN}' has no result yet`);
    // After the read, the taint gate holds submit_output too: answered with the plugin, as a person would.
    expect(await client.callTool({ id: "o1", tool: "submit_output", args: { output: "the digest\n" } })).toMatchObject({ decision: "ask", approvalId: "gate-o1" });
    await waitForPending(["gate-o1"]);
    expect((await plugin(["approve", RUN, "gate-o1", "--once", "-n", namespace])).stdout).toContain("applied: allowOnce");
    expect(await client.waitForCall("o1", "submit_output", 60)).toMatchObject({ decision: "run" });
    const result = await waitFor(async () => {
      const r = await plugin(["result", RUN, "-n", namespace]);
      return r.code === 0 ? r : undefined;
    }, { description: "the Run's result" });
    expect(result.stdout).toBe("the digest\n");

    // Beyond 4096 bytes the sidecar keeps the result in the ConfigMap `<run>-result`; the plugin prints it from there.
    const big = `${"x".repeat(5000)}\n`;
    expect(await client.callTool({ id: "o2", tool: "submit_output", args: { output: big } })).toMatchObject({ decision: "ask", approvalId: "gate-o2" });
    await waitForPending(["gate-o2"]);
    // Answered by a user who may do what the chart's approver role allows and nothing else, through --kubeconfig
    // (whose context names the namespace); that user may not read the audit ConfigMaps, and is told so.
    await kubectl(["create", "serviceaccount", "approver", "-n", namespace]);
    await kubectl(["create", "role", "approver", "-n", namespace, "--verb=create,get,list,watch", "--resource=approvals.leviath.dev"]);
    await kubectl(["create", "role", "run-reader", "-n", namespace, "--verb=get,list,watch", "--resource=runs.leviath.dev"]);
    for (const role of ["approver", "run-reader"]) await kubectl(["create", "rolebinding", role, "-n", namespace, `--role=${role}`, `--serviceaccount=${namespace}:approver`]);
    const approver = await writeServiceAccountKubeconfig(join(root, "approver.kubeconfig"), namespace, "approver");
    const approved = await plugin(["approve", RUN, "--once", "--kubeconfig", approver]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain("applied: allowOnce");
    const forbidden = await plugin(["audit", RUN, "--kubeconfig", approver]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/^kubectl leviath audit: .*configmaps "ask-run-audit-000" is forbidden: User "system:serviceaccount:[^"]+:approver"/);
    // Bound to the Role the controller keeps (get on exactly the Runs' record ConfigMaps), the approver reads the
    // audit, and still no other ConfigMap of the namespace.
    await waitFor(async () => {
      const role = await kubectl(["get", "role", "leviath-run-records", "-n", namespace, "-o", "json"], { allowFailure: true });
      const rules = role.exitCode === 0 ? (JSON.parse(role.stdout) as { rules?: { resourceNames?: string[] }[] }).rules : undefined;
      return rules?.[0]?.resourceNames?.includes(`${RUN}-audit-000`) ? true : undefined;
    }, { description: "the leviath-run-records Role to name the Run's first audit chunk" });
    await kubectl(["create", "rolebinding", "records", "-n", namespace, "--role=leviath-run-records", `--serviceaccount=${namespace}:approver`]);
    const readable = await waitFor(async () => {
      const r = await plugin(["audit", RUN, "-o", "json", "--kubeconfig", approver]);
      return r.code === 0 ? r : undefined;
    }, { description: "the approver to read the audit through leviath-run-records" });
    expect(readable.stdout).toContain('"call_id":"o1"');
    const other = await kubectl(["get", "configmap", `${RUN}-approvals`, "--kubeconfig", approver], { allowFailure: true });
    expect(other.exitCode).toBe(1);
    expect(other.stderr).toContain("forbidden");
    expect(await client.waitForCall("o2", "submit_output", 60)).toMatchObject({ decision: "run" });
    const fromConfigMap = await waitFor(async () => {
      const r = await plugin(["result", RUN, "-n", namespace]);
      return r.stdout !== "the digest\n" ? r : undefined;
    }, { description: "the Run's result moved to its ConfigMap" });
    expect(fromConfigMap.code, fromConfigMap.stderr).toBe(0);
    expect(fromConfigMap.stdout).toBe(big);
  });

  it("says why a call was refused or asked, with the change that would allow it, and describes the Run on one screen", async () => {
    // The run policy the controller would have pinned (this Run has no Agent, so nothing pinned one): why reads it.
    const runPolicy = JSON.stringify({ ...PLUGIN_RUN_POLICY, agent: { key: `${namespace}/agent`, name: "agent" } });
    await kubectl(["create", "configmap", `${RUN}-policy`, "-n", namespace, `--from-literal=run-policy.json=${runPolicy}`]);
    expect(await client.callTool({ id: "r9", tool: "read_file", args: { path: "/etc/hostname" } })).toMatchObject({ decision: "deny" });
    expect(await client.callTool({ id: "w1", tool: "web_fetch", args: { url: "https://docs.example.com/x" } })).toMatchObject({ decision: "ask", approvalId: "tool-w1" });
    await waitForPending(["tool-w1"]);
    const audited = (id: string) => waitFor(async () => {
      const r = await plugin(["audit", RUN, "-o", "json", "-n", namespace]);
      return r.stdout.includes(`"call_id":"${id}"`) ? true : undefined;
    }, { description: `call ${id} in the audit ConfigMaps` });
    await audited("w1");

    // Its permission asks and the taint gate holds it (the context holds the internal read): one prompt names both
    // (issue 44), each ask on record, and why explains the last one recorded, the gate's.
    const pendingW1 = await waitFor(async () => {
      const run = (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: { pendingApprovals?: { id: string; prompt?: string }[] } };
      return run.status?.pendingApprovals?.find((p) => p.id === "tool-w1");
    }, { description: "the prompt of w1 on the Run's status" });
    expect(pendingW1.prompt).toMatch(/^This call is held for 2 reasons: \(1\) Allow tool 'web_fetch'\? .* \(2\) Tool 'web_fetch' would send Internal-level data over a channel cleared only for Public\. Allow it\?/);
    const last = await plugin(["why", RUN, "-n", namespace]);
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout).toBe([
      `run ${RUN}, call w1 (web_fetch, stage main): ask, decision source auto_block`,
      "rule:    taint gate: the context holds internal data and web_fetch may carry out only public, to 'docs.example.com'; no allowlist or CEL rule allowed it",
      "change:  the smallest that would allow it",
      "  in the LeviathPolicy (kubectl edit leviathpolicy cluster):",
      "      spec:", "        taint:", "          allowlist:", '            - {tool: web_fetch, to: ["docs.example.com"], maxSensitivity: internal}',
      "note:    the rule lets every such call through without asking; answering the prompt allows this one",
      "",
    ].join("\n"));
    const stored = (await plugin(["audit", RUN, "-o", "json", "-n", namespace])).stdout.trim().split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { leviath_audit: { record: Record<string, unknown> } }).leviath_audit.record);
    expect(stored.filter((r) => r["call_id"] === "w1").map((r) => r["decision_source"])).toEqual(["permission_ask", "auto_block"]);
    const read = await plugin(["why", RUN, "r9", "--syntax", "toml", "-n", namespace]);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toContain(`run ${RUN}, call r9 (read_file, stage main): deny, decision source workdir (outside-workdir)`);
    expect(read.stdout).toContain("rule:    workdir: /etc/hostname is outside the Run's workspace, and no read path (declared by the Agent and granted by the LeviathPolicy) covers it (outside-workdir)");
    expect(read.stdout).toContain('  in agent.leviath:\n      [read_paths]\n      allow = ["/etc/hostname"]');
    // /etc is the node's: the grant's snippet says what it opens before the stanza.
    expect(read.stdout).toContain(`  in config.toml:\n      # caution: /etc/hostname holds system or secret files: the model would read them and may send what it reads; grant a narrower path if the task allows\n      [agent_read_paths."${namespace}/agent"]\n      allow = ["/etc/hostname"]`);
    // The taint gate: the read of notes.md tainted the context; shell may carry out only public data.
    expect(await client.callTool({ id: "s3", tool: "shell", args: { command: "uname -a" } })).toMatchObject({ decision: "ask", approvalId: "gate-s3" });
    await waitForPending(["gate-s3", "tool-w1"]);
    await audited("s3");
    const gate = await plugin(["why", RUN, "s3", "-n", namespace]);
    expect(gate.stdout).toContain("rule:    taint gate: the context holds internal data and shell may carry out only public (it names no target); no allowlist or CEL rule allowed it");
    expect(gate.stdout).toContain("      - {tool: shell, maxSensitivity: internal}");
    expect((await plugin(["why", RUN, "s1", "-n", namespace])).stdout).toBe(`run ${RUN}, call s1: allow (decision source user_allow_once): nothing refused it\n`);
    const missing = await plugin(["why", RUN, "nope", "-n", namespace]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(new RegExp(`^kubectl leviath why: run '${RUN}' has no call 'nope' in its audit \\(last calls: .*s3`));

    // What the runtime says it does not honour, as the reference runtime reports it at its start.
    const hooks = "stages[0].runtime.hooks: ignored by leviath agent";
    expect(await client.reportWarnings([hooks])).toEqual({ added: 1, kept: 1, omitted: 0 });
    await waitFor(async () => {
      const run = (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: { runtimeWarnings?: string[] } };
      return run.status?.runtimeWarnings?.includes(hooks) ? true : undefined;
    }, { description: "the runtime's warning on the Run's status" });
    const described = await plugin(["describe", RUN, "-n", namespace]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(new RegExp(`^Name:\\s+${RUN}\nNamespace:\\s+${namespace}\nPinned to:\\s+not pinned yet\nPhase:\\s+Pending`));
    expect(described.stdout).toMatch(/Conditions:\n\s+TYPE\s+STATUS\s+REASON\s+MESSAGE\n\s+PolicyResolved\s+False\s+AgentNotFound/);
    expect(described.stdout).toMatch(/Pending prompts:\n\s+ID\s+KIND\s+TOOL\s+TARGET\s+STAGE\s+AGE\n(\s+\S+.*\n){2}/);
    expect(described.stdout).toMatch(/\s+tool-w1\s+tool_approval\s+web_fetch\s+docs\.example\.com\s+main\s/);
    expect(described.stdout).toMatch(/\s+gate-s3\s+taint_gate\s+shell\s+uname -a\s+main\s/);
    expect(described.stdout).toContain(`Not honoured by the runtime:\n  ${hooks}\n`);
    expect(described.stdout).toMatch(/^Decisions:\s+.*auto_block \d+/m);
    expect(described.stdout).toMatch(new RegExp(`^Result:\\s+5001 bytes, in ConfigMap ${RUN}-result`, "m"));
    expect(described.stdout).toMatch(/Last refusals and prompts:\n\s+TIME\s+CALL\s+TOOL\s+DECISION\s+SOURCE\s+CODE\n[\s\S]*\s+r9\s+read_file\s+deny\s+workdir\s+outside-workdir\n[\s\S]*\s+s3\s+shell\s+ask\s+auto_block/);

    for (const id of ["tool-w1", "gate-s3"]) expect((await plugin(["approve", RUN, id, "--deny", "-n", namespace])).stdout).toContain("applied: deny");
  });

  it("waits for a terminal phase, says where the Run stands when it times out, and refuses an unknown phase", async () => {
    // No kubelet runs an engine pod here, so the Run never ends: Succeeded (exit 0) and Failed (exit 1, and 0 with
    // --for Failed) are proven on the real node (test/e2e/demo.test.ts, test/e2e/run-flow.test.ts).
    const early = await plugin(["wait", RUN, "--timeout", "2s", "-n", namespace]);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain(`timed out waiting for run '${RUN}' (phase Pending)`);
    expect((await plugin(["wait", RUN, "--for", "Bogus", "-n", namespace])).code).toBe(2);
    const missing = await plugin(["wait", "no-such-run", "--timeout", "2s", "-n", namespace]);
    expect(missing.code, missing.stderr).toBe(1);
  });
});
