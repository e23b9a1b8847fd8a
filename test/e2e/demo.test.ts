// The README's first command as root, end to end (issues 33, 44): `scripts/demo --once` starts its own control
// plane and node beside the suite's, installs a real storage provisioner (local-path-provisioner, built from its Go
// module) and the chart with real helm, runs `leviath model-server` in the cluster with its credential Secrets, and
// runs examples/ with the reference runtime to Succeeded, answering both prompts with `kubectl leviath approve`; then
// docs/quickstart.md's "Try your own Agent" (examples/try/) against the echo, to Succeeded. Checked from what the
// user sees: the setup's progress lines, the commands and their answers, the claim bound by the provisioner (no
// hand-made volume), the refused read in the audit, the results, the controller's reconcile errors after the Runs
// (none, for every controller: scraped from its metrics), and nothing of the demo's cluster left afterwards.
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runDemo } from "../integration/harness/run-demo.ts";

describe("scripts/demo --once, as root", () => {
  it("runs the example Agent to Succeeded, its prompts answered with kubectl leviath, and removes its cluster", async () => {
    const { code, stdout, stderr } = await runDemo(["--once"]);
    expect(code, `${stdout}\n${stderr}`).toBe(0);

    // What a fresh machine lacks is prepared first: one line a step, what it is, what it costs the first time and
    // what it took; the build output is in the log it names, not on the screen.
    expect(stdout).toMatch(/^==> preparing this machine \(each step is skipped when already done; build output: \S+\/demo-setup\.log\)$/m);
    expect(stdout).toMatch(/^--- scripts\/control-plane-bin: .+ \(the first time: 25 to 60 minutes on 2 cores\) \.\.\. \d+\.\d s$/m);
    expect(stdout).toMatch(/^--- scripts\/build-images demo: .+ \.\.\. \d+\.\d s$/m);
    expect(stdout).not.toMatch(/^(build-images|node-bin|control-plane-bin|go: downloading)/m);
    // The kubectl and helm it runs, and the PATH it runs them with.
    expect(stdout).toMatch(/^ {4}kubectl and helm: (\S+) \(the demo puts them first on PATH, with bin\/ for kubectl leviath: PATH=\S+\/bin:\1:/m);
    // The operator is the quickstart's release, so the names operations.md and metrics.md give are the demo's.
    expect(stdout).toMatch(/^\$ helm install leviath-operator charts\/leviath-operator -n leviath-system /m);
    expect(stdout).toMatch(/^leviath-operator-[a-z0-9]+-[a-z0-9]+\s+1\/1\s+Running\s/m);
    // The stand-in model runs in the cluster, from the operator's image, with its Secrets ready.
    expect(stdout).toMatch(/^deployment\.apps\/model-server\s+1\/1\s/m);
    expect(stdout).toMatch(/^secret\/model-provider (created|configured)\nsecret\/echo-model (created|configured)$/m);
    // The shell call asked (the Agent's `shell: ask`), then the taint gate held the result; both answered with the plugin.
    const approvals = [...stdout.matchAll(/^\$ kubectl leviath approve digest-docs (\S+) --once --reason .+ -n leviath-sandbox\napproval\.leviath\.dev\/digest-docs-\S+ created: allowOnce for prompt '(\S+)' of run 'digest-docs'\napplied: allowOnce$/gm)];
    expect(approvals.map((m) => m[1]!.split("-")[0])).toEqual(["tool", "gate"]);
    expect(approvals.every((m) => m[1] === m[2])).toBe(true);
    expect(stdout).toMatch(/^leviath-sandbox\s+digest-docs\s+tool-mcp-\S+\s+tool_approval\s+shell\s+survey\s/m);
    expect(stdout).toMatch(/^leviath-sandbox\s+digest-docs\s+gate-mcp-\S+\s+taint_gate\s+submit_output\s+digest\s/m);
    // The Run ended by itself, its result is the digest, and the audit names the refused read and who allowed what.
    expect(stdout).toMatch(/^run\.leviath\.dev\/digest-docs Succeeded: /m);
    expect(stdout).toMatch(/^digest-docs\s+notes-digest\s+Succeeded\s+AgentSucceeded\s+digest\s+private\s/m);
    expect(stdout).toContain("$ kubectl leviath result digest-docs -n leviath-sandbox\n# Digest\n- The docs site moves to the new theme this week.\n");
    expect(stdout).toMatch(/\sread_file\s+allow\s+auto_allow\s+call_id=\S+ paths=\["\/data\/team-notes\/2025-06-02-standup\.md"\]/);
    expect(stdout).toMatch(/\sread_file\s+deny\s+read_path\s+call_id=\S+ code=not-declared paths=\["\/etc\/passwd"\]/);
    expect(stdout).toMatch(/\ssubmit_output\s+allow\s+user_allow_once\s+call_id=\S+ integrity=trusted approved_by=leviath-admin approv/);
    expect(stdout).toContain("\nThe Run ended Succeeded.\n");
    // The Run's claim named no class: the default, local-path, made and bound its volume.
    expect(stdout).toMatch(/^digest-docs-workspace\s+Bound\s+pvc-\S+\s+1Gi\s+RWO\s+local-path\s/m);
    // Your own Agent, as the quickstart writes it, against the echo in the cluster.
    expect(stdout).toContain("$ kubectl apply -f examples/try/\nagent.leviath.dev/hello created\nrun.leviath.dev/hello-1 created\n");
    expect(stdout).toMatch(/^\S+ \[answer 1\/5\] model: \d+ bytes of text, 0 tool call\(s\), stop end\n\S+ \[run\] the last stage ended: the run succeeded$/m);
    expect(stdout).toContain("\nYour Run ended Succeeded.\n");
    // A healthy cluster, quiet, read as operations.md's troubleshooting does: the lease held by the controller's pod,
    // no error line in its log, and after both Runs and their Approvals no controller counted a reconcile error (the
    // chart's LeviathReconcileErrors alert fires on any).
    expect(stdout).toMatch(/^\$ kubectl get lease leviath-operator --namespace leviath-system -o jsonpath=\{\.spec\.holderIdentity\}\nleviath-operator-[a-z0-9]+-[a-z0-9]+/m);
    expect(stdout).toMatch(/^\(0 error lines\)$/m);
    const errors = [...stdout.matchAll(/^controller_runtime_reconcile_errors_total\{controller="(\w+)"\} (\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
    expect(errors.map(([controller]) => controller).sort(), stdout).toEqual(["agent", "approval", "policy", "pool", "records", "run"]);
    expect(errors.filter(([, value]) => value !== "0"), stdout).toEqual([]);
    // Its control plane and node are gone: the data dirs it printed were removed.
    const dirs = [/kubeconfig (\S+)\/kubeconfig/.exec(stdout)?.[1], /logs in (\S+)/.exec(stdout)?.[1]];
    expect(dirs.every((d) => d !== undefined), stdout).toBe(true);
    for (const dir of dirs) expect(existsSync(dir!), dir).toBe(false);
  }, 900_000);
});
