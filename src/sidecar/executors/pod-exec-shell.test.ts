import { EventEmitter } from "node:events";
import type { Writable } from "node:stream";
import type { V1Status } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { PodExec } from "../../kube/pod-exec.ts";
import { buildSweepCommand, MARK_FAILED } from "../../sandbox/process-sweep.ts";
import { parseExecStatus } from "./exec-status.ts";
import { buildExecCommand, buildMarkedExecCommand, createPodExecShell } from "./pod-exec-shell.ts";
import { createPodSweeper, type PodSweeper } from "./pod-exec-sweep.ts";
import type { RunStage } from "./shell.ts";

// client-node's Exec is replaced by a fake that plays the API server's side of the exec stream; the real
// thing needs a kubelet (pods never run on the test API server).
interface Script {
  frames?: ["out" | "err", Buffer | string][];
  status?: V1Status;
  /** Never close: the sidecar's own backstop must end the exec. */
  hang?: boolean;
  fail?: Error;
  /** How the sweeps after the command end (Success when unset). */
  sweep?: V1Status;
}

/** Whether an exec'd command line is the sweep (src/sandbox/process-sweep.ts names its `sh -c` so). */
const isSweep = (command: string | string[]) => Array.isArray(command) && command[3] === "leviath-sweep";

function fakeExec(script: Script, seen: unknown[][] = []): PodExec {
  return {
    async exec(namespace: string, pod: string, container: string, command: string | string[], stdout: Writable | null, stderr: Writable | null, _stdin: unknown, tty: boolean, cb?: (s: V1Status) => void) {
      seen.push([namespace, pod, container, command, tty]);
      if (script.fail) throw script.fail;
      const socket = Object.assign(new EventEmitter(), { close: () => setImmediate(() => socket.emit("close")) });
      if (isSweep(command)) {
        setImmediate(() => {
          cb?.(script.sweep ?? { status: "Success" });
          socket.close();
        });
        return socket as never;
      }
      setImmediate(() => {
        for (const [which, data] of script.frames ?? []) (which === "out" ? stdout : stderr)!.write(typeof data === "string" ? Buffer.from(data) : data);
        if (script.status) cb?.(script.status);
        if (!script.hang) socket.close();
      });
      return socket as never;
    },
  };
}

const stage = { name: "build", sandbox: { kind: "container", network: false, mounts: [], persist: false, onUnavailable: "error", source: "policy" } } as RunStage;
const target = () => ({ pod: "run-1-sbx-abc", container: "sandbox" });

describe("createPodExecShell", () => {
  it("execs `timeout -s KILL <n> sh -c` into the stage's pod, marked, then sweeps it, and returns its output and exit code", async () => {
    const seen: unknown[][] = [];
    const shell = createPodExecShell({ exec: fakeExec({ frames: [["out", "hello\n"], ["err", "warn\n"]], status: { status: "Success" } }, seen), namespace: "team", target });
    const r = await shell.run({ command: "echo hello", timeoutSeconds: 30, stage });
    expect(r).toEqual({ exitCode: 0, stdout: "hello\n", stderr: "warn\n", timedOut: false });
    // The command line ends with the unmarked one; the marker's deadline is the sidecar's own (30 + 5 s grace) and a second.
    const marked = buildMarkedExecCommand("echo hello", 30, 5, 0);
    expect(marked.slice(-7)).toEqual(["timeout", "-s", "KILL", "30", "sh", "-c", "echo hello"]);
    expect(marked.slice(3, 6)).toEqual(["leviath-shell", "0", "36"]);
    expect(seen).toEqual([["team", "run-1-sbx-abc", "sandbox", marked, false], ["team", "run-1-sbx-abc", "sandbox", buildSweepCommand([0]), false]]);
  });

  it("gives commands running at once slots of their own, sweeps each one's own, and frees them", async () => {
    const swept: number[] = [];
    const sweep: PodSweeper = async (_pod, _container, slot) => {
      swept.push(slot);
      return undefined;
    };
    const seen: unknown[][] = [];
    const shell = createPodExecShell({ exec: fakeExec({ status: { status: "Success" } }, seen), namespace: "team", target, sweep });
    await Promise.all([shell.run({ command: "a", timeoutSeconds: 30, stage }), shell.run({ command: "b", timeoutSeconds: 30, stage })]);
    expect(seen.map((s) => (s[3] as string[])[4])).toEqual(["0", "1"]);
    expect(swept.sort()).toEqual([0, 1]);
    await shell.run({ command: "c", timeoutSeconds: 30, stage });
    expect((seen[2]![3] as string[])[4]).toBe("0");
  });

  it("refuses a command that could not be marked (it did not run) and sweeps nothing", async () => {
    const status: V1Status = { status: "Failure", details: { causes: [{ reason: "ExitCode", message: String(MARK_FAILED.exitCode) }] } };
    const seen: unknown[][] = [];
    const r = await createPodExecShell({ exec: fakeExec({ frames: [["err", MARK_FAILED.stderr]], status }, seen), namespace: "team", target }).run({ command: "true", timeoutSeconds: 5, stage });
    expect(r.error).toBe("leviath: cannot mark the command in /proc/self/loginuid, so it did not run (pod/run-1-sbx-abc: the node's container runtime must leave its containers' audit login uid unset)");
    expect(seen).toHaveLength(1);
  });

  it("is an error when what the command left cannot be confirmed ended, after retrying the sweep", async () => {
    const seen: unknown[][] = [];
    const failing: V1Status = { status: "Failure", details: { causes: [{ reason: "ExitCode", message: "137" }] } };
    const exec = fakeExec({ status: { status: "Success" }, sweep: failing }, seen);
    const sweep = createPodSweeper({ exec, namespace: "team", retryMs: [1, 1] });
    const r = await createPodExecShell({ exec, namespace: "team", target, sweep }).run({ command: "true", timeoutSeconds: 5, stage });
    expect(r.error).toBe("the processes the command left in pod/run-1-sbx-abc could not be ended: the sweep exited with 137");
    expect(seen.filter((s) => isSweep(s[3] as string[]))).toHaveLength(3);
    const unfinished = createPodSweeper({ exec: fakeExec({ sweep: { status: "Failure", details: { causes: [{ reason: "ExitCode", message: "4" }] } } }), namespace: "team", retryMs: [] });
    expect(await unfinished("p", "c", 3)).toBe("the processes the command left in pod/p could not be ended: processes were still being started after 100 passes");
  });

  it("reads a non-zero exit code from the status causes", async () => {
    const status: V1Status = { status: "Failure", reason: "NonZeroExitCode", details: { causes: [{ reason: "ExitCode", message: "3" }] } };
    const shell = createPodExecShell({ exec: fakeExec({ status }), namespace: "team", target });
    expect(await shell.run({ command: "exit 3", timeoutSeconds: 30, stage })).toMatchObject({ exitCode: 3, timedOut: false });
    expect(parseExecStatus({ status: "Failure", message: "container not found" })).toEqual({ error: "container not found" });
  });

  it("drops the exec past the seed's frame cap and the sidecar's output budget", async () => {
    const big = Buffer.alloc(8 * 1024 * 1024 + 1, 0x61);
    const shell = createPodExecShell({ exec: fakeExec({ frames: [["out", big]], hang: true }), namespace: "team", target });
    const r = await shell.run({ command: "yes", timeoutSeconds: 30, stage });
    expect(r).toMatchObject({ capped: "stream frame exceeded 8 MiB from pod/run-1-sbx-abc", stdout: "" });
    const frames: ["out", Buffer][] = Array.from({ length: 3 }, () => ["out", Buffer.alloc(8 * 1024 * 1024, 0x61)]);
    const body = await createPodExecShell({ exec: fakeExec({ frames, hang: true }), namespace: "team", target }).run({ command: "yes", timeoutSeconds: 30, stage });
    expect(body.capped).toBe("response body exceeded 8 MiB from pod/run-1-sbx-abc");
  });

  it("gives up after the timeout plus grace when the stream never ends, and reports a failed exec", async () => {
    const hung = createPodExecShell({ exec: fakeExec({ hang: true }), namespace: "team", target, graceSeconds: 0 });
    const r = await hung.run({ command: "sleep 99", timeoutSeconds: 0.2, stage });
    expect(r).toMatchObject({ timedOut: true, exitCode: null });
    const failing = createPodExecShell({ exec: fakeExec({ fail: new Error("pods \"run-1-sbx-abc\" is forbidden") }), namespace: "team", target });
    expect((await failing.run({ command: "true", timeoutSeconds: 5, stage })).error).toBe('pods/exec into pod/run-1-sbx-abc failed: pods "run-1-sbx-abc" is forbidden');
    const noPod = createPodExecShell({ exec: fakeExec({}), namespace: "team", target: () => ({ error: "stage 'build' has no sandbox pod" }) });
    expect((await noPod.run({ command: "true", timeoutSeconds: 5, stage })).error).toBe("stage 'build' has no sandbox pod");
  });

  it("builds the in-sandbox timeout into the command line", () => {
    expect(buildExecCommand("ls; rm -rf x", 7)).toEqual(["timeout", "-s", "KILL", "7", "sh", "-c", "ls; rm -rf x"]);
  });
});
