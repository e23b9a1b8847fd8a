// The README's first command without a node, end to end: `scripts/demo --once --no-node` starts its own control
// plane and controller, applies examples/ and shows the Agents with their findings and the Runs with their phase.
// (As root, plain `scripts/demo` also starts a node and runs the agent to Succeeded: test/e2e/demo.test.ts.)
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/index.ts";
import { runDemo } from "../harness/run-demo.ts";

describe("scripts/demo --no-node", () => {
  it("shows the Agent's findings and the Run's phase, then stops everything", async () => {
    const { code, stdout, stderr } = await runDemo(["--once", "--no-node"]);
    expect(code, `${stdout}\n${stderr}`).toBe(0);

    const table = (header: string) => stdout.slice(stdout.indexOf(`\n${header}`) + 1).split("\n").slice(0, 2).map((l) => l.split(/\s+/));
    const [agentHeader, agent] = table("AGENT ");
    expect(agentHeader).toEqual(["AGENT", "VALID", "READS", "FINDINGS"]);
    expect(agent).toEqual(["notes-digest", "true", "1/2", "read-paths-not-granted,read-paths-declared,sandbox-image-clamped,tool-permission-clamped"]);
    const [runHeader, run] = table("RUN ");
    expect(runHeader).toEqual(["RUN", "PHASE", "POLICY", "CONDITIONS"]);
    expect(run).toEqual(["digest-docs", "Pending", "1", "PolicyResolved,SandboxReady,NetworkIsolated,AwaitingApproval,CredentialsReady,PodSecurityEnforced,Completed,Ready,Reconciling"]);
    expect(stdout).toMatch(/^run\.leviath\.dev\/digest-docs\s+notes-digest\s+Pending\s+WaitingForPods\s/m);
    expect(stdout).toMatch(/^agent\.leviath\.dev\/notes-digest\s+True\s+Valid\s/m);
    // The story so far, from kubectl get events.
    expect(stdout).toMatch(/Normal\s+Valid\s+agent\/notes-digest\s+valid/);
    expect(stdout).toMatch(/Normal\s+WaitingForPods\s+run\/digest-docs\s+waiting for sandbox pods/);
    expect(stdout).toMatch(/^networkpolicy\.networking\.k8s\.io\/digest-docs-isolate\s/m);
    expect(stdout).toMatch(/^pod\/digest-docs-engine\s+0\/2\s+Pending/m);
    // Its control plane is gone: the data dir it printed was removed.
    const dataDir = /kubeconfig (\S+)\/kubeconfig/.exec(stderr)?.[1];
    expect(dataDir).toBeDefined();
    expect(existsSync(dataDir!)).toBe(false);
  }, 600_000);

  it("stops on Ctrl-C with exit status 0 and no word of a controller failure", async () => {
    const env = { ...process.env };
    delete env.KUBECONFIG;
    // Its own process group, as a terminal's foreground job: Ctrl-C signals every process in it.
    const child = spawn("bash", [join(REPO_ROOT, "scripts/demo"), "--no-node"], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const exit = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const deadline = Date.now() + 540_000;
    while (!stdout.includes("running; Ctrl-C stops everything") && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(stdout, stderr).toContain("running; Ctrl-C stops everything");
    process.kill(-child.pid!, "SIGINT");
    expect(await exit, `${stdout}\n${stderr}`).toBe(0);
    expect(stderr).not.toContain("the controller exited");
  }, 600_000);
});
