import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLocalShell } from "./local-shell.ts";
import { buildShellResultText, type RunStage } from "./shell.ts";

const stage = { name: "main", sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } } as RunStage;
const workdir = realpathSync(mkdtempSync(join(tmpdir(), "leviath-shell-")));
const confinement = { base: realpathSync(mkdtempSync(join(tmpdir(), "leviath-shell-base-"))), workdir, hidden: [] };
const shell = createLocalShell({ workdir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ONLY: "this" }, confinement });
afterAll(() => {
  for (const dir of [workdir, confinement.base]) rmSync(dir, { recursive: true, force: true });
});

describe("createLocalShell", () => {
  it("runs in the workdir with only the given environment", async () => {
    const r = await shell.run({ command: "pwd; env | sort | grep -v '^_=\\|^PWD=\\|^SHLVL=\\|^PATH='", timeoutSeconds: 10, stage });
    expect(r).toEqual({ exitCode: 0, stdout: `${workdir}\nONLY=this\n`, stderr: "", timedOut: false });
  });

  it("kills the whole process group at the timeout", async () => {
    const started = Date.now();
    const r = await shell.run({ command: "sleep 30 & sleep 30; echo never", timeoutSeconds: 1, stage });
    expect(r.timedOut).toBe(true);
    expect(r.stdout).toBe("");
    expect(Date.now() - started).toBeLessThan(5000);
    expect(buildShellResultText(r, 1)).toEqual({ text: "[error] command timed out after 1 seconds", isError: true });
  });

  it("stops a command whose output passes the cap", async () => {
    const small = createLocalShell({ workdir, env: { PATH: process.env["PATH"] ?? "" }, maxOutputBytes: 1000, confinement });
    const r = await small.run({ command: "yes", timeoutSeconds: 10, stage });
    expect(r.capped).toBe("response body exceeded 1000 bytes from the local shell");
  });

  it("shares the output cap between the commands running at once", async () => {
    const small = createLocalShell({ workdir, env: { PATH: process.env["PATH"] ?? "" }, maxOutputBytes: 100_000, confinement });
    const [a, b] = await Promise.all([1, 2].map(() => small.run({ command: "head -c 60000 /dev/zero; sleep 1", timeoutSeconds: 10, stage })));
    expect([a!.capped, b!.capped].filter((c) => c !== undefined)).toHaveLength(1);
  });

  it("formats stdout, stderr and a non-zero exit", async () => {
    const r = await shell.run({ command: "echo out; echo err >&2; exit 4", timeoutSeconds: 10, stage });
    expect(buildShellResultText(r, 10)).toEqual({ text: "out\nerr\n[exit code: 4]", isError: false });
  });

  it("keeps a visible installation under /tmp readable, never writable, and what is hidden inside it hidden", async () => {
    const install = realpathSync(mkdtempSync("/tmp/leviath-install-"));
    writeFileSync(join(install, "tool.js"), "ok\n");
    mkdirSync(join(install, "secret"));
    writeFileSync(join(install, "secret", "token"), "s3cret\n");
    const other = realpathSync(mkdtempSync("/tmp/leviath-other-"));
    writeFileSync(join(other, "f"), "x\n");
    const c = { ...confinement, visible: [install], hidden: [join(install, "secret")] };
    const sh = createLocalShell({ workdir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, confinement: c });
    const r = await sh.run({ command: `cat ${install}/tool.js; touch ${install}/new 2>/dev/null || echo ro; cat ${install}/secret/token 2>/dev/null || echo hidden; ls ${other} 2>/dev/null || echo gone`, timeoutSeconds: 10, stage });
    expect(r.stdout).toBe("ok\nro\nhidden\ngone\n");
  });
});
