import { spawn } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { ChannelReader, type ChannelEvent } from "../sidecar/executors/channel-frames.ts";
import { buildChannelCommand, buildChannelEndScript, buildChannelHello, buildChannelRequest, buildChannelScript, CHANNEL_EXIT } from "./shell-channel.ts";

// The multiplexer's framing with the real sh of this machine. Its sweep and wrapper are stand-ins here (the real
// ones mark and kill by login uid, which on a host would reach every process of a logged-in user): what they do
// in a pod is proven on the real node (test/e2e/process-tree.test.ts, over the channel).
const SWEEP_STUB = "sweep() { echo \"$*\" >>\"$_f.swept\"; return 0; }";
const WRAPPER_STUB = 'shift 2\n"$@"';

/** The multiplexers started: their files in /tmp are removed after the tests. */
const started: number[] = [];
afterAll(() => {
  for (const name of readdirSync("/tmp")) if (started.some((pid) => name.startsWith(`.leviath-channel-${pid}.`))) rmSync(`/tmp/${name}`, { force: true });
});

/** A multiplexer with the stand-ins and a cap of `cap` bytes, and what it writes, read as the sidecar reads it. */
function startMux(cap = 64) {
  const [cmd, ...args] = buildChannelCommand(buildChannelScript(SWEEP_STUB, WRAPPER_STUB, cap));
  const child = spawn(cmd!, args, { stdio: ["pipe", "pipe", "inherit"] });
  started.push(child.pid!);
  const events: ChannelEvent[] = [];
  let wake: () => void = () => {};
  const budget = { used: 0, take(n: number) {
    this.used += n;
    return this.used <= 1000;
  } };
  const reader = new ChannelReader((e) => {
    events.push(e);
    wake();
  }, cap + 1, budget);
  child.stdout.on("data", (c: Buffer) => reader.push(c));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const next = async (): Promise<ChannelEvent> => {
    while (events.length === 0) await new Promise<void>((r) => (wake = r));
    return events.shift()!;
  };
  return { child, next, exited, write: (s: string) => child.stdin.write(s) };
}

describe("the shell channel's multiplexer (real sh)", () => {
  it("answers the hello, runs each request's command with its lines whole, and returns its streams and exit code by length", async () => {
    const mux = startMux();
    mux.write(buildChannelHello("aa11", 7));
    const ready = await mux.next();
    expect(ready).toMatchObject({ kind: "ready" });
    const command = "printf 'a\\\\b  c\\n'\necho ' x' >&2\nexit 3";
    mux.write(buildChannelRequest({ token: "aa11", next: "bb22", deadlineSeconds: 36, timeoutSeconds: 30, command })!);
    expect(await mux.next()).toMatchObject({ kind: "result", token: "aa11", exitCode: 3, sweep: 0, dropped: false });
    // A second call on the same stream: the next token, output with no trailing newline, and binary-safe lengths.
    mux.write(buildChannelRequest({ token: "bb22", next: "cc33", deadlineSeconds: 2, timeoutSeconds: 1, command: "printf 'é\\n\\n'; printf 'no newline' >&2" })!);
    const second = await mux.next();
    expect(second.kind === "result" && [second.stdout.toString(), second.stderr.toString(), second.exitCode]).toEqual(["é\n\n", "no newline", 0]);
    mux.child.stdin.end();
    expect(await mux.exited).toBe(0);
  });

  it("keeps a stream to the cap and one byte, and stops a command writing on (SIGPIPE)", async () => {
    const mux = startMux(10);
    mux.write(buildChannelHello("aa", 1));
    await mux.next();
    mux.write(buildChannelRequest({ token: "aa", next: "bb", deadlineSeconds: 60, timeoutSeconds: 30, command: "yes; echo $? >&2" })!);
    const r = await mux.next();
    // 11 bytes of the endless output, and `yes` ended by SIGPIPE (128 + 13) once its reader had them.
    expect(r.kind === "result" && [r.stdout.toString(), r.stderr.toString(), r.exitCode]).toEqual(["y\ny\ny\ny\ny\ny", "141\n", 0]);
  });

  it("refuses a request without the expected token (one a command wrote in) and exits before running it", async () => {
    const mux = startMux();
    mux.write(buildChannelHello("aa", 1));
    await mux.next();
    mux.write(buildChannelRequest({ token: "guess", next: "bb", deadlineSeconds: 60, timeoutSeconds: 30, command: "echo ran" })!);
    expect(await mux.next()).toEqual({ kind: "refused" });
    expect(await mux.exited).toBe(CHANNEL_EXIT.refused);
    // A token that was right once is not right again: the first request names the next one.
    const again = startMux();
    again.write(buildChannelHello("aa", 1));
    await again.next();
    again.write(buildChannelRequest({ token: "aa", next: "bb", deadlineSeconds: 60, timeoutSeconds: 30, command: "true" })!);
    await again.next();
    again.write(buildChannelRequest({ token: "aa", next: "cc", deadlineSeconds: 60, timeoutSeconds: 30, command: "echo replayed" })!);
    expect(await again.next()).toEqual({ kind: "refused" });
    // Numbers that are not whole seconds and a count of lines are refused too.
    const bad = startMux();
    bad.write(buildChannelHello("aa", 1));
    await bad.next();
    bad.write("aa bb 1.5 30 1\ntrue\n");
    expect(await bad.next()).toEqual({ kind: "refused" });
  });

  it("says it is unavailable when a tool it needs is missing", async () => {
    const [cmd, ...args] = buildChannelCommand(buildChannelScript(SWEEP_STUB, WRAPPER_STUB, 64));
    const child = spawn(cmd === "sh" ? "/bin/sh" : cmd!, args, { stdio: ["pipe", "pipe", "inherit"], env: { PATH: "/nonexistent" } });
    started.push(child.pid!);
    child.stdin.end(buildChannelHello("aa", 1));
    const out = await new Promise<string>((r) => {
      let s = "";
      child.stdout.on("data", (c: Buffer) => (s += c.toString()));
      child.on("close", () => r(s));
    });
    expect(out).toBe("leviath-channel unavailable timeout is not on the PATH\n");
  });

  it("builds requests a line reader reads back whole, and no request for a command with a NUL byte", () => {
    expect(buildChannelRequest({ token: "t", next: "n", deadlineSeconds: 36.2, timeoutSeconds: 0.25, command: "a\n\nb" })).toBe("t n 37 0.25 3\na\n\nb\n");
    expect(buildChannelRequest({ token: "t", next: "n", deadlineSeconds: 1, timeoutSeconds: 1, command: "a\0b" })).toBeUndefined();
    expect(buildChannelEndScript(SWEEP_STUB)).toMatch(/\[ "\$1" != 1 \] && .* && \[ "\$_pp" = 0 \] && kill -KILL "\$1"/);
  });
});
