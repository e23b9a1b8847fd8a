// A command's whole process tree ends with it in a sandbox pod on the real node, as it does standalone. The
// sidecar's own cluster shell (src/sidecar/executors/pod-exec-shell.ts over src/kube/pod-exec.ts) runs commands
// in a sandbox pod made with the operator's restricted settings and its PID 1 (SANDBOX_PID1); a later exec
// reads /proc in the pod. A `setsid` child, a double fork, a `nohup` child and one that also clears its
// environment are gone when the call returns, while a command running at the same time, and what it started
// with setsid, are left alone until it ends; a command that kills its `timeout` and runs past it is ended with
// everything it started; and when no sweep follows a command at all (the sidecar died), PID 1 ends its leftovers.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectKube, type ClusterClient } from "../../src/kube/connect.ts";
import { createPodExec } from "../../src/kube/pod-exec.ts";
import { PID1_SWEEP_SECONDS } from "../../src/sandbox/process-sweep.ts";
import { SANDBOX_PID1 } from "../../src/sandbox/pods.ts";
import { createPodExecShell } from "../../src/sidecar/executors/pod-exec-shell.ts";
import type { RunStage, ShellExecutor } from "../../src/sidecar/executors/shell.ts";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { buildSandboxPod, execInPod, runPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const NS = "e2e-process-tree";
const POD = "proctree";
const stage = { name: "build", sandbox: { kind: "container", network: false, mounts: [], persist: false, onUnavailable: "error", source: "policy" } } as RunStage;

/** The command lines of every live process in the pod (zombies have none), read from /proc by a later exec. */
async function processes(): Promise<string[]> {
  const r = await execInPod(NS, POD, "for p in /proc/[0-9]*; do tr '\\0' ' ' <\"$p/cmdline\" 2>/dev/null; echo; done");
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
}

/** The `sleep <n>` sentinels among them. */
const sleeps = (lines: string[], ...ns: number[]) => lines.filter((l) => ns.some((n) => l === `sleep ${n}`));

describe("a command's processes in a sandbox pod", () => {
  let client: ClusterClient;
  let shell: ShellExecutor;
  const run = (command: string, timeoutSeconds = 60) => shell.run({ command, timeoutSeconds, stage });

  beforeAll(async () => {
    client = await connectKube(inject("kubeconfig"), {});
    await kubectl(["create", "namespace", NS]);
    await runPod(buildSandboxPod({ name: POD, namespace: NS, image: node.images.sandbox!, command: SANDBOX_PID1 }));
    shell = createPodExecShell({ exec: createPodExec(client), namespace: NS, target: () => ({ pod: POD, container: "sandbox" }), graceSeconds: 1 });
  });

  afterAll(async () => {
    await kubectl(["delete", "namespace", NS, "--wait=false"], { allowFailure: true });
  });

  it("ends a setsid child, a double fork and a nohup child with the call, and leaves a call running at the same time alone", async () => {
    // The concurrent call: it starts its own setsid child and waits for the test's go.
    const concurrent = run("setsid sleep 7301 & while [ ! -e /tmp/go ]; do sleep 0.1; done; echo concurrent-done");
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
});
