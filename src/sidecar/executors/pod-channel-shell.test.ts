import { spawn, type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { readdirSync, rmSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { PodExec } from "../../kube/pod-exec.ts";
import { buildChannelCommand, buildChannelScript } from "../../sandbox/shell-channel.ts";
import { createClusterShell, createPodChannelShell, ShellChannels } from "./pod-channel-shell.ts";
import { SlotPool } from "./pod-exec-sweep.ts";
import type { RunStage, ShellExecutor, ShellRequest, ShellResult } from "./shell.ts";

// The API server's side is a fake that runs the multiplexer with this machine's sh, its sweep and wrapper stood in
// for (the real ones kill by login uid, which on a host would reach a logged-in user's processes): what the
// executor does with the channel, here; what the scripts do in a pod, on the real node (test/e2e/process-tree.test.ts).
const SWEEP_STUB = "sweep() { return 0; }";
const WRAPPER_STUB = 'shift 2\n"$@"';

const stage = { name: "build", sandbox: { kind: "container", network: false, mounts: [], persist: false, onUnavailable: "error", source: "policy" } } as RunStage;
const target = () => ({ pod: "run-1-sbx-abc", container: "sandbox" });
const children: ChildProcess[] = [];

afterAll(() => {
  const pids = children.map((c) => c.pid);
  for (const name of readdirSync("/tmp")) if (pids.some((pid) => name.startsWith(`.leviath-channel-${pid}.`))) rmSync(`/tmp/${name}`, { force: true });
});

/** What the fake API server saw: every exec's command line. */
interface Fake extends PodExec {
  readonly seen: string[][];
  /** The multiplexers it started. */
  readonly muxes: ChildProcess[];
  /** Everything written to each channel, in order. */
  readonly written: string[];
}

/** A fake exec: the channel runs as a local sh (`path`: its PATH); any other exec (the channel's end) succeeds at once. */
function fakeExec(path = process.env["PATH"] ?? "/usr/bin:/bin"): Fake {
  const seen: string[][] = [];
  const muxes: ChildProcess[] = [];
  const written: string[] = [];
  return {
    seen,
    muxes,
    written,
    async exec(_ns: string, _pod: string, _container: string, command: string | string[], stdout: Writable | null, _stderr: Writable | null, stdin: Readable | null) {
      const argv = [command].flat();
      seen.push(argv);
      const socket = Object.assign(new EventEmitter(), { close: () => undefined as void });
      if (argv[3] !== "leviath-channel") {
        setImmediate(() => socket.emit("close"));
        return socket as never;
      }
      const [, ...args] = buildChannelCommand(buildChannelScript(SWEEP_STUB, WRAPPER_STUB, 8 * 1024 * 1024));
      const child = spawn("/bin/sh", args, { stdio: ["pipe", "pipe", "ignore"], env: { PATH: path } });
      children.push(child);
      muxes.push(child);
      const at = written.push("") - 1;
      stdin!.on("data", (c: Buffer) => void (written[at] += c.toString("utf8")));
      stdin!.pipe(child.stdin!);
      child.stdout!.on("data", (c: Buffer) => stdout!.write(c));
      child.on("close", () => socket.emit("close"));
      socket.close = () => {
        child.kill("SIGKILL");
      };
      return socket as never;
    },
  };
}

/** A fallback that records what it ran. */
function recordingFallback(): ShellExecutor & { ran: string[] } {
  const ran: string[] = [];
  return { label: "pod_exec", ran, run: async (req: ShellRequest): Promise<ShellResult> => {
    ran.push(req.command);
    return { exitCode: 0, stdout: "by exec\n", stderr: "", timedOut: false };
  } };
}

const isChannel = (argv: string[]) => argv[3] === "leviath-channel";
const isEnd = (argv: string[]) => argv[3] === "leviath-channel-end";

describe("createPodChannelShell", () => {
  it("opens one channel for a pod and runs every later call on it: one exec for many calls", async () => {
    const exec = fakeExec();
    const slots = new SlotPool();
    const swept: number[] = [];
    const shell = createPodChannelShell({ exec, namespace: "team", target, fallback: recordingFallback(), slots, sweep: async (_p, _c, s) => void swept.push(s) });
    for (let i = 0; i < 5; i++) expect(await shell.run({ command: `echo ${i}; echo e >&2; exit ${i}`, timeoutSeconds: 30, stage })).toEqual({ exitCode: i, stdout: `${i}\n`, stderr: "e\n", timedOut: false });
    expect(exec.seen.filter(isChannel)).toHaveLength(1);
    expect(exec.seen).toHaveLength(1);
    // The channel holds its slot while it is open; the fallback takes another.
    expect(slots.take()).toBe(1);
    expect(swept).toEqual([]);
  });

  it("execs a call that finds the channel busy, and a pod whose image cannot run one", async () => {
    const exec = fakeExec();
    const fallback = recordingFallback();
    const shell = createPodChannelShell({ exec, namespace: "team", target, fallback, slots: new SlotPool() });
    const [a, b] = await Promise.all([shell.run({ command: "sleep 0.3; echo on-channel", timeoutSeconds: 30, stage }), shell.run({ command: "echo two", timeoutSeconds: 30, stage })]);
    expect(a.stdout).toBe("on-channel\n");
    expect(b.stdout).toBe("by exec\n");
    expect(fallback.ran).toEqual(["echo two"]);
    const bare = fakeExec("/nonexistent");
    const bareFallback = recordingFallback();
    const onBare = createPodChannelShell({ exec: bare, namespace: "team", target, fallback: bareFallback, slots: new SlotPool() });
    expect((await onBare.run({ command: "true", timeoutSeconds: 30, stage })).stdout).toBe("by exec\n");
    expect((await onBare.run({ command: "true", timeoutSeconds: 30, stage })).stdout).toBe("by exec\n");
    // Asked once: the pod is not asked to open a channel again.
    expect(bare.seen.filter(isChannel)).toHaveLength(1);
  });

  it("fails a call closed when its channel breaks under it, never runs it again, and ends the channel (multiplexer killed, slot swept) first", async () => {
    const exec = fakeExec();
    const swept: number[] = [];
    const fallback = recordingFallback();
    const shell = createPodChannelShell({ exec, namespace: "team", target, fallback, slots: new SlotPool(), sweep: async (_p, _c, s) => void swept.push(s) });
    expect((await shell.run({ command: "true", timeoutSeconds: 30, stage })).exitCode).toBe(0);
    // The command kills its own multiplexer: the stream closes with no result.
    const r = await shell.run({ command: `kill -9 ${exec.muxes[0]!.pid}; sleep 5`, timeoutSeconds: 30, stage });
    expect(r.error).toMatch(/^the shell channel to pod\/run-1-sbx-abc broke during the call \(the channel's stream closed\); the command may have run, and what it left was ended$/);
    expect(exec.seen.filter(isEnd)).toEqual([["sh", "-c", expect.any(String), "leviath-channel-end", String(exec.muxes[0]!.pid), "0"]]);
    expect(swept).toEqual([0]);
    expect(fallback.ran).toEqual([]);
    // The next call opens a new channel.
    expect((await shell.run({ command: "echo again", timeoutSeconds: 30, stage })).stdout).toBe("again\n");
    expect(exec.seen.filter(isChannel)).toHaveLength(2);
  });

  it("reads `timeout`'s kill as a timeout, and gives up at the timeout plus grace when no result comes, ending the channel", async () => {
    const exec = fakeExec();
    const swept: number[] = [];
    const shell = createPodChannelShell({ exec, namespace: "team", target, fallback: recordingFallback(), slots: new SlotPool(), graceSeconds: 1, sweep: async (_p, _c, s) => void swept.push(s) });
    expect(await shell.run({ command: "exec sleep 30", timeoutSeconds: 0.3, stage })).toMatchObject({ exitCode: 137, stdout: "", timedOut: true });
    // The command stops its multiplexer: no result ever comes.
    const r = await shell.run({ command: `kill -STOP ${exec.muxes[0]!.pid}`, timeoutSeconds: 0.3, stage });
    expect(r).toEqual({ exitCode: null, stdout: "", stderr: "", timedOut: true });
    expect(exec.seen.filter(isEnd)).toHaveLength(1);
    expect(swept).toEqual([0]);
  });

  it("refuses a command with a NUL byte without sending it", async () => {
    const exec = fakeExec();
    const shell = createPodChannelShell({ exec, namespace: "team", target, fallback: recordingFallback(), slots: new SlotPool() });
    expect((await shell.run({ command: "a\0b", timeoutSeconds: 5, stage })).error).toBe("the command has a NUL byte, which no command line can hold");
    expect((await shell.run({ command: "echo fine", timeoutSeconds: 5, stage })).stdout).toBe("fine\n");
  });
});

describe("ShellChannels.prepare: a channel opened before the first call", () => {
  const pod = { pod: "run-1-sbx-abc", container: "sandbox" };

  it("sends nothing but its first frame until a call, and the first call runs on it: one exec in all", async () => {
    const exec = fakeExec();
    const channels = new ShellChannels({ exec, namespace: "team", slots: new SlotPool() });
    channels.prepare(pod);
    // Asked twice, opened once.
    channels.prepare(pod);
    const shell = createClusterShell({ channels, target });
    // The call comes while the channel may still be opening: it waits for that opening, it does not open another.
    expect(await shell.run({ command: "echo first", timeoutSeconds: 30, stage })).toEqual({ exitCode: 0, stdout: "first\n", stderr: "", timedOut: false });
    expect(exec.seen.filter(isChannel)).toHaveLength(1);
    expect(exec.seen).toHaveLength(1);
    // The hello (a token and the slot) came before the call's one request frame, and nothing else.
    const lines = exec.written[0]!.split("\n");
    expect(lines[0]).toMatch(/^leviath-channel [0-9a-f]{32} 0$/);
    expect(lines[1]!.split(" ")[0]).toBe(lines[0]!.split(" ")[1]);
    expect(exec.written[0]).toContain("echo first");
  });

  it("is opened before any call: the channel is up and has its hello alone while no call came", async () => {
    const exec = fakeExec();
    const channels = new ShellChannels({ exec, namespace: "team", slots: new SlotPool() });
    channels.prepare(pod);
    await vi.waitFor(() => expect(exec.muxes).toHaveLength(1));
    await vi.waitFor(() => expect(exec.written[0]).toMatch(/^leviath-channel [0-9a-f]{32} 0\n$/));
    const shell = createClusterShell({ channels, target });
    expect((await shell.run({ command: "echo later", timeoutSeconds: 30, stage })).stdout).toBe("later\n");
    expect(exec.seen.filter(isChannel)).toHaveLength(1);
  });

  it("forgets an early open that failed: the first call opens a channel as it would have", async () => {
    const exec = fakeExec();
    let refuse = true;
    const flaky: PodExec = { exec: (...args) => (refuse ? Promise.reject(new Error("forbidden")) : exec.exec(...args)) };
    const channels = new ShellChannels({ exec: flaky, namespace: "team", slots: new SlotPool() });
    channels.prepare(pod);
    const fallback = recordingFallback();
    const shell = createPodChannelShell({ exec: flaky, namespace: "team", target, fallback, slots: channels.slots, channels });
    await new Promise((r) => setTimeout(r, 0));
    refuse = false;
    expect((await shell.run({ command: "echo opened-by-the-call", timeoutSeconds: 30, stage })).stdout).toBe("opened-by-the-call\n");
    expect(exec.seen.filter(isChannel)).toHaveLength(1);
    expect(fallback.ran).toEqual([]);
  });

  it("closes every channel at the sidecar's stop: each multiplexer ends, and none is opened again", async () => {
    const exec = fakeExec();
    const channels = new ShellChannels({ exec, namespace: "team", slots: new SlotPool() });
    channels.prepare(pod);
    channels.prepare({ pod: "run-1-sbx-def", container: "sandbox" });
    await vi.waitFor(() => expect(exec.written.filter((w) => w.startsWith("leviath-channel "))).toHaveLength(2));
    const ended = exec.muxes.map((m) => new Promise((resolve) => m.on("exit", resolve)));
    channels.close();
    await Promise.all(ended);
    channels.prepare({ pod: "run-1-sbx-ghi", container: "sandbox" });
    expect(exec.seen.filter(isChannel)).toHaveLength(2);
    // No end was exec'd for them: the stream's end is the multiplexer's stop.
    expect(exec.seen.filter(isEnd)).toEqual([]);
  });

  it("learns early that a pod's image cannot run a channel: its calls are exec'd, the pod is not asked again", async () => {
    const bare = fakeExec("/nonexistent");
    const channels = new ShellChannels({ exec: bare, namespace: "team", slots: new SlotPool() });
    channels.prepare(pod);
    const fallback = recordingFallback();
    const shell = createPodChannelShell({ exec: bare, namespace: "team", target, fallback, slots: channels.slots, channels });
    expect((await shell.run({ command: "true", timeoutSeconds: 30, stage })).stdout).toBe("by exec\n");
    channels.prepare(pod);
    expect((await shell.run({ command: "true", timeoutSeconds: 30, stage })).stdout).toBe("by exec\n");
    expect(bare.seen.filter(isChannel)).toHaveLength(1);
  });
});
