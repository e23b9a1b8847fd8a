// The README's first command, end to end: `scripts/demo --once` starts its own control plane and controller,
// applies examples/ and shows the Agents with their findings and the Runs with their phase.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/index.ts";

describe("scripts/demo --once", () => {
  it("shows the Agent's findings and the Run's phase, then stops everything", async () => {
    const env = { ...process.env };
    delete env.KUBECONFIG;
    const child = spawn("bash", [join(REPO_ROOT, "scripts/demo"), "--once"], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, `${stdout}\n${stderr}`).toBe(0);

    const table = (header: string) => stdout.slice(stdout.indexOf(`\n${header}`) + 1).split("\n").slice(0, 2).map((l) => l.split(/\s+/));
    const [agentHeader, agent] = table("AGENT ");
    expect(agentHeader).toEqual(["AGENT", "VALID", "READS", "FINDINGS"]);
    expect(agent).toEqual(["notes-digest", "true", "1/2", "read-paths-not-granted,read-paths-declared,tool-permission-clamped"]);
    const [runHeader, run] = table("RUN ");
    expect(runHeader).toEqual(["RUN", "PHASE", "POLICY", "CONDITIONS"]);
    expect(run).toEqual(["digest-docs", "Pending", "1", "Resolved,WaitingForPods,NetworkPolicyApplied,NoPendingApproval,Running"]);
    expect(stdout).toMatch(/^run\.leviath\.dev\/digest-docs\s+notes-digest\s+Pending/m);
    expect(stdout).toMatch(/^networkpolicy\.networking\.k8s\.io\/digest-docs-isolate\s/m);
    expect(stdout).toMatch(/^pod\/digest-docs-engine\s+0\/2\s+Pending/m);
    // Its control plane is gone: the data dir it printed was removed.
    const dataDir = /kubeconfig (\S+)\/kubeconfig/.exec(stderr)?.[1];
    expect(dataDir).toBeDefined();
    expect(existsSync(dataDir!)).toBe(false);
  }, 600_000);
});
