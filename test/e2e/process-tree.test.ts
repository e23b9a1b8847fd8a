// A command's whole process tree ends with it in a sandbox pod on the real node, as it does standalone. The
// sidecar's own cluster shell (src/sidecar/executors/pod-channel-shell.ts: one channel held open per pod, the per-call
// exec of pod-exec-shell.ts beside it, over src/kube/pod-exec.ts) runs commands in a sandbox pod made with the
// operator's restricted settings and its PID 1 (SANDBOX_PID1); the calls under test go over the channel (no exec of
// their own, counted), and a call running at the same time over a channel of its own; a later exec
// reads /proc in the pod: every process's status, task list and login uid (a command's marker), not only its command
// line, which is empty for a zombie. A `setsid` child, a double fork, a `nohup` child and one that also clears its
// environment are gone when the call returns, while a command running at the same time, and what it started
// with setsid, are left alone until it ends; a command that kills its `timeout` and runs past it is ended with
// everything it started; when no sweep follows a command at all (the sidecar died), PID 1 ends its leftovers; a
// program whose main thread exited while another thread runs on (issue 41: a zombie leader, skipped by the sweep)
// is ended with the call; no signal a command sends stops PID 1 (issue 41: `kill -TERM 1` ended it); and a command
// that writes a request into its channel's multiplexer, or a result ahead, runs nothing and answers no later call.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectKube, type ClusterClient } from "../../src/kube/connect.ts";
import { createPodExec, type PodExec } from "../../src/kube/pod-exec.ts";
import { PID1_SWEEP_SECONDS } from "../../src/sandbox/process-sweep.ts";
import { SANDBOX_PID1 } from "../../src/sandbox/pods.ts";
import { createClusterShell } from "../../src/sidecar/executors/pod-channel-shell.ts";
import { createPodExecShell } from "../../src/sidecar/executors/pod-exec-shell.ts";
import { SlotPool } from "../../src/sidecar/executors/pod-exec-sweep.ts";
import type { RunStage, ShellExecutor } from "../../src/sidecar/executors/shell.ts";
import { kubectl, REPO_ROOT, waitFor } from "../integration/harness/index.ts";
import { buildSandboxPod, execInPod, runPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const NS = "e2e-process-tree";
const POD = "proctree";
const stage = { name: "build", sandbox: { kind: "container", network: false, mounts: [], persist: false, onUnavailable: "error", source: "policy" } } as RunStage;

/** One process of the pod as /proc shows it: its state, how many tasks (threads) it has, its login uid and command line. */
type Proc = { pid: number; loginuid: string; state: string; tasks: number; cmdline: string };

/** Every process in the pod, read from /proc/<pid>/status, /proc/<pid>/task and /proc/<pid>/loginuid by a later exec. */
async function listProcs(): Promise<Proc[]> {
  const script = [
    "for p in /proc/[0-9]*; do",
    "  s=$(sed -n 's/^State:[[:space:]]*\\([A-Z]\\).*/\\1/p' $p/status 2>/dev/null); [ -n \"$s\" ] || continue",
    "  n=0; for t in $p/task/[0-9]*; do [ -e \"$t\" ] && n=$((n + 1)); done",
    "  l=$(cat $p/loginuid 2>/dev/null); c=$(tr '\\0\\n' '  ' <$p/cmdline 2>/dev/null)",
    "  echo \"${p#/proc/}|$l|$s|$n|$c\"",
    "done",
  ].join("\n");
  const r = await execInPod(NS, POD, script);
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.split("\n").filter((l) => /^\d+\|/.test(l)).map((l) => {
    const [pid, loginuid, state, tasks, ...cmd] = l.split("|");
    return { pid: Number(pid), loginuid: loginuid ?? "", state: state ?? "", tasks: Number(tasks), cmdline: cmd.join("|").trim() };
  });
}

/** Whether anything of the process runs: it is no zombie, or it is a zombie leader with other threads running on. */
const isRunning = (p: Proc) => !["Z", "X"].includes(p.state) || p.tasks > 1;

/** The command lines of every running process in the pod. */
async function processes(): Promise<string[]> {
  return (await listProcs()).filter(isRunning).map((p) => p.cmdline).filter((c) => c !== "");
}

/** Every running process a command started (its login uid is a marker, unlike PID 1's and a `kubectl exec`'s). */
async function commandProcesses(): Promise<Proc[]> {
  const all = await listProcs();
  const base = all.find((p) => p.pid === 1)?.loginuid;
  expect(base).toBeDefined();
  return all.filter((p) => p.loginuid !== base && isRunning(p));
}

/** The `sleep <n>` sentinels among them. */
const sleeps = (lines: string[], ...ns: number[]) => lines.filter((l) => ns.some((n) => l === `sleep ${n}`));

/** test/e2e/harness/lingering-thread built statically here (the sandbox image has no compiler), as base64. */
function buildLingeringThread(): string {
  const out = mkdtempSync(join(tmpdir(), "leviath-e2e-linger-"));
  try {
    const go = process.env["GO"] ?? (execFileSync("sh", ["-c", "command -v go || echo /usr/local/go/bin/go"]).toString().trim());
    execFileSync(go, ["build", "-trimpath", "-ldflags=-s -w", "-o", join(out, "linger"), "."], {
      cwd: join(REPO_ROOT, "test/e2e/harness/lingering-thread"), env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=mod" }, stdio: ["ignore", "ignore", "inherit"],
    });
    return readFileSync(join(out, "linger")).toString("base64");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** An exec client that counts the execs it opens (each a request to the API server, and a read of the pod before it). */
function countingExec(exec: PodExec): PodExec & { opened: number } {
  const counted = { opened: 0, exec: (...args: Parameters<PodExec["exec"]>) => {
    counted.opened++;
    return exec.exec(...args);
  } };
  return counted;
}

describe("a command's processes in a sandbox pod", () => {
  let client: ClusterClient;
  let shell: ShellExecutor;
  let exec: ReturnType<typeof countingExec>;
  /** The slots of the commands running in the pod: one sidecar's, shared by every shell of the test as by its executors. */
  const slots = new SlotPool();
  /** A call over the channel: it opens no exec (the channel is open before the first test). */
  const run = async (command: string, timeoutSeconds = 60) => {
    const before = exec.opened;
    const r = await shell.run({ command, timeoutSeconds, stage });
    if (r.error === undefined && !r.timedOut) expect(exec.opened, "execs the call opened").toBe(before);
    return r;
  };

  beforeAll(async () => {
    client = await connectKube(inject("kubeconfig"), {});
    await kubectl(["create", "namespace", NS]);
    await runPod(buildSandboxPod({ name: POD, namespace: NS, image: node.images.sandbox!, command: SANDBOX_PID1 }));
    exec = countingExec(createPodExec(client));
    shell = createClusterShell({ exec, namespace: NS, target: () => ({ pod: POD, container: "sandbox" }), graceSeconds: 1, slots });
    // The channel opens with the first call: one exec, once.
    expect(await shell.run({ command: "true", timeoutSeconds: 10, stage })).toMatchObject({ exitCode: 0 });
    expect(exec.opened).toBe(1);
    // What a command could write itself (write_file, or base64 in the command): the attack program, in the pod's /tmp.
    const put = await kubectl(["exec", "-i", "-n", NS, POD, "-c", "sandbox", "--", "sh", "-c", "base64 -d >/tmp/linger && chmod 755 /tmp/linger"],
      { input: buildLingeringThread(), timeoutMs: 60_000 });
    expect(put.exitCode, put.stderr).toBe(0);
  }, 180_000);

  afterAll(async () => {
    await kubectl(["delete", "namespace", NS, "--wait=false"], { allowFailure: true });
  });

  it("ends a setsid child, a double fork and a nohup child with the call, and leaves a call running at the same time alone", async () => {
    // The concurrent call, over a channel of its own: it starts its own setsid child and waits for the test's go.
    const other = createClusterShell({ exec: createPodExec(client), namespace: NS, target: () => ({ pod: POD, container: "sandbox" }), graceSeconds: 1, slots });
    const concurrent = other.run({ stage, timeoutSeconds: 60, command: "setsid sleep 7301 & while [ ! -e /tmp/go ]; do sleep 0.1; done; echo concurrent-done" });
    await waitFor(async () => sleeps(await processes(), 7301).length === 1, { timeoutMs: 30_000, intervalMs: 200, description: "the concurrent call to start" });
    const attack = "setsid sleep 7101 & (sleep 7102 &); nohup sleep 7103 >/dev/null 2>&1 & setsid env -i /bin/sh -c 'sleep 7104' & echo left";
    const r = await run(attack);
    expect(r).toMatchObject({ exitCode: 0, stdout: "left\n", timedOut: false });
    expect(r.error).toBeUndefined();
    const after = await processes();
    expect(sleeps(after, 7101, 7102, 7103, 7104)).toEqual([]);
    // The concurrent call and its own setsid child still run...
    expect(sleeps(after, 7301)).toEqual(["sleep 7301"]);
    await execInPod(NS, POD, "touch /tmp/go");
    // ...and it ends as it would have alone; then its own child is gone too.
    expect(await concurrent).toMatchObject({ exitCode: 0, stdout: "concurrent-done\n", timedOut: false });
    expect(sleeps(await processes(), 7301)).toEqual([]);
  });

  it("ends a command that killed its timeout and ran past it, with everything it started", async () => {
    // busybox's timeout kills the command from a grandchild orphaned to PID 1 and carrying the command's login
    // uid; the command kills it, so nothing in the pod stops the command at its timeout.
    const killer = [
      "read -r me </proc/self/loginuid",
      'for p in /proc/[0-9]*; do read -r l <$p/loginuid; [ "$l" = "$me" ] && [ "$(sed -n "s/^PPid:[[:space:]]*//p" $p/status)" = 1 ] && kill -9 ${p#/proc/}; done',
      "setsid sleep 7201 & exec sleep 7202",
    ].join("; ");
    const r = await run(killer, 2);
    // The sidecar gave up on it (no exit status: `timeout` did not end it), then swept it.
    expect(r).toMatchObject({ timedOut: true, exitCode: null });
    expect(r.error).toBeUndefined();
    expect(sleeps(await processes(), 7201, 7202)).toEqual([]);
    // The channel given up on was ended; the next call opens another.
    expect(await shell.run({ command: "true", timeoutSeconds: 10, stage })).toMatchObject({ exitCode: 0 });
  });

  it("ends what a command left when neither its exec nor the sidecar swept (it killed its exec's first process; the sidecar is gone): PID 1 does", async () => {
    const unswept = createPodExecShell({ exec: createPodExec(client), namespace: NS, target: () => ({ pod: POD, container: "sandbox" }), sweep: async () => undefined });
    const command = [
      "read -r me </proc/self/loginuid",
      "setsid sleep 7401 & (sleep 7402 &)",
      'for p in /proc/[0-9]*; do read -r l <$p/loginuid; [ "$l" = "$me" ] && [ "$(sed -n "s/^PPid:[[:space:]]*//p" $p/status)" = 0 ] && kill -9 ${p#/proc/}; done',
      "echo left",
    ].join("; ");
    const r = await unswept.run({ command, timeoutSeconds: 60, stage });
    // The exec ends once PID 1 has killed what held its output open, long before the timeout.
    expect(r).toMatchObject({ exitCode: 137, timedOut: false });
    await waitFor(async () => sleeps(await processes(), 7401, 7402).length === 0, {
      timeoutMs: (PID1_SWEEP_SECONDS + 10) * 1000, intervalMs: 250, description: "PID 1 to end the unswept leftovers",
    });
  });

  it("ends a program whose main thread exited while another runs on (a zombie leader) with the call, and nothing copies a later write", async () => {
    await execInPod(NS, POD, "echo before >/tmp/secret; rm -f /tmp/copy");
    // Started apart from the call (setsid, its output not held) and given time to end its main thread before the call does.
    const r = await run("setsid /tmp/linger /tmp/secret /tmp/copy </dev/null >/dev/null 2>&1 & sleep 1; echo left");
    expect(r).toMatchObject({ exitCode: 0, stdout: "left\n", timedOut: false });
    expect(r.error).toBeUndefined();
    // It ran (its copy is there), and nothing of it runs now: no task of any process a command started.
    expect((await execInPod(NS, POD, "cat /tmp/copy")).stdout).toBe("before\n");
    expect(await commandProcesses()).toEqual([]);
    // A later call writes the file: a full call and an exec later (each longer than its 100 ms period), no copy of it.
    await execInPod(NS, POD, "echo after >/tmp/secret");
    expect(await run("cat /tmp/secret")).toMatchObject({ exitCode: 0, stdout: "after\n" });
    expect((await execInPod(NS, POD, "cat /tmp/copy")).stdout).toBe("before\n");
  });

  it("runs nothing a command writes into its channel, answers no call with a result it wrote ahead, and caps output", async () => {
    // The multiplexer: the command's first ancestor whose parent is outside the container.
    const findMux = 'p=$$; while :; do pp=$(sed -n "s/^PPid:[[:space:]]*//p" /proc/$p/status); [ "$pp" = 0 ] && break; p=$pp; done';
    const before = exec.opened;
    const inject = await shell.run({ stage, timeoutSeconds: 10, command: `${findMux}; printf 'aaaa bbbb 999 999 1\\nsetsid sleep 7601 &\\n' >/proc/$p/fd/0 && echo injected` });
    expect(inject).toMatchObject({ exitCode: 0, stdout: "injected\n" });
    // Once the call has ended the multiplexer reads the written request, refuses it and exits; the sidecar, asked
    // nothing, ends the channel (an exec) and the next call opens another.
    await waitFor(async () => exec.opened > before, { timeoutMs: 30_000, intervalMs: 50, description: "the refused channel to be ended" });
    expect(await shell.run({ command: "echo next", timeoutSeconds: 10, stage })).toMatchObject({ exitCode: 0, stdout: "next\n" });
    expect(sleeps(await processes(), 7601)).toEqual([]);
    // A result written ahead into the channel's output is taken for no call: its own call is the one that fails.
    const forged = await shell.run({ command: `${findMux}; printf 'leviath-channel result 0123 0 0 7 0\\nforged\\n' >/proc/$p/fd/1 && echo real`, timeoutSeconds: 10, stage });
    expect(forged.error).toMatch(/^the shell channel to pod\/proctree broke during the call \(answered for another request\)/);
    expect(await shell.run({ command: "echo after", timeoutSeconds: 10, stage })).toMatchObject({ exitCode: 0, stdout: "after\n" });
    // Endless output: 8 MiB and the command is stopped (SIGPIPE), nothing of it left.
    const flood = await run("yes leviath-flood");
    expect(flood.capped).toBe("response body exceeded 8 MiB from pod/proctree");
    expect((await processes()).filter((l) => l.startsWith("yes"))).toEqual([]);
  });

  // Last: on a sandbox whose PID 1 a command can stop, the pod is gone after it.
  it("leaves PID 1 running through every signal a command sends it (kill -TERM, -INT, -HUP 1, and the rest)", async () => {
    const pid1 = (await listProcs()).find((p) => p.pid === 1);
    expect(pid1?.cmdline).toMatch(/^sh -c sweep\(\) \{/);
    const r = await run("kill -TERM 1; kill -INT 1; kill -HUP 1; for s in QUIT USR1 USR2 ALRM PIPE KILL STOP; do kill -$s 1; done; sleep 1; echo sent");
    expect(r).toMatchObject({ exitCode: 0, stdout: "sent\n", timedOut: false });
    const after = (await listProcs()).find((p) => p.pid === 1);
    expect(after?.cmdline).toBe(pid1!.cmdline);
    expect(["S", "R"]).toContain(after?.state);
    const pod = JSON.parse((await kubectl(["get", "pod", POD, "-n", NS, "-o", "json"])).stdout) as { status: { phase: string; containerStatuses: { restartCount: number; state: Record<string, unknown> }[] } };
    expect(pod.status.phase).toBe("Running");
    expect(Object.keys(pod.status.containerStatuses[0]!.state)).toEqual(["running"]);
    // And it still sweeps: what a call left with no sweep after it (its exec's first process killed) is gone within its period.
    const unswept = createPodExecShell({ exec: createPodExec(client), namespace: NS, target: () => ({ pod: POD, container: "sandbox" }), sweep: async () => undefined });
    const command = [
      "read -r me </proc/self/loginuid",
      "(setsid sleep 7501 </dev/null >/dev/null 2>&1 &)",
      'for p in /proc/[0-9]*; do read -r l <$p/loginuid; [ "$l" = "$me" ] && [ "$(sed -n "s/^PPid:[[:space:]]*//p" $p/status)" = 0 ] && kill -9 ${p#/proc/}; done',
    ].join("; ");
    expect(await unswept.run({ command, timeoutSeconds: 60, stage })).toMatchObject({ exitCode: 137, timedOut: false });
    await waitFor(async () => sleeps(await processes(), 7501).length === 0, {
      timeoutMs: (PID1_SWEEP_SECONDS + 10) * 1000, intervalMs: 250, description: "PID 1 to end the unswept leftover after the signals",
    });
  });
});
