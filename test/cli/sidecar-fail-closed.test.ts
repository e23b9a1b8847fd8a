import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSidecarClient } from "../../src/runtime/sidecar-client.ts";
import { makeTempDir, startSidecar } from "./sidecar-harness.ts";

// The real sidecar killed or frozen while the runtime waits on it: the client must report a deny.
function tree(mode: string): string[] {
  const root = makeTempDir("leviath-sidecar-fc-");
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'fc'\n[security]\ntaint_tracking = true\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nshell = 'allow'\n");
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  return ["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--mode", mode];
}

describe("killing or hanging the sidecar never produces an allow", () => {
  it("a sidecar killed while a shell call is running is a deny", async () => {
    const sc = await startSidecar(tree("interactive"));
    const client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 20_000 });
    const pending = client.callTool({ id: "k1", tool: "shell", args: { command: "sleep 5; echo done" } });
    setTimeout(() => sc.proc.kill("SIGKILL"), 300);
    const a = await pending;
    expect(a).toMatchObject({ decision: "deny", code: "sidecar-unavailable", failedClosed: true });
    expect(await sc.stop()).toBe("SIGKILL");
    expect(await client.callTool({ id: "k2", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "deny", code: "sidecar-unavailable" });
  });

  it("a frozen sidecar is a deny after the client's timeout", async () => {
    const sc = await startSidecar(tree("interactive"));
    const client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 500 });
    expect(await client.callTool({ id: "f0", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "allow", result: "notes\n" });
    sc.proc.kill("SIGSTOP");
    try {
      const a = await client.callTool({ id: "f1", tool: "read_file", args: { path: "notes.md" } });
      expect(a).toMatchObject({ decision: "deny", code: "sidecar-unavailable", message: "[denied] Tool 'read_file' was not run: the sidecar did not answer (no answer within 500 ms)." });
    } finally {
      sc.proc.kill("SIGCONT");
    }
    expect(await sc.stop()).toBe(0);
  });

  it("a call waiting on a prompt is a deny when the sidecar dies, and when it stops cleanly", async () => {
    let sc = await startSidecar(tree("interactive"));
    let client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 2000 });
    await client.callTool({ id: "p0", tool: "read_file", args: { path: "notes.md" } });
    expect(await client.callTool({ id: "p1", tool: "shell", args: { command: "echo x" } })).toMatchObject({ decision: "ask", approvalId: "gate-p1" });
    const waiting = client.waitForCall("p1", "shell", 30);
    setTimeout(() => sc.proc.kill("SIGKILL"), 200);
    expect(await waiting).toMatchObject({ decision: "deny", failedClosed: true });
    await sc.stop();

    sc = await startSidecar(tree("interactive"));
    client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 2000 });
    await client.callTool({ id: "q0", tool: "read_file", args: { path: "notes.md" } });
    expect(await client.callTool({ id: "q1", tool: "shell", args: { command: "echo x" } })).toMatchObject({ decision: "ask" });
    const stopping = client.waitForCall("q1", "shell", 30);
    setTimeout(() => sc.proc.kill("SIGTERM"), 200);
    const a = await stopping;
    expect(a).toMatchObject({ decision: "deny", failedClosed: true });
    // The test sent the SIGTERM: wait for the exit, and send no second signal into the process's last moments.
    expect(await sc.exited()).toBe(0);
  }, 120_000); // several sidecar starts and waits: longer than 30 s on a loaded machine
});
