// Cluster shell over one long-lived channel per sandbox pod (src/sandbox/shell-channel.ts): the first call into a
// pod opens a pods/exec running the multiplexer and keeps it; each later call is a request frame on it and a
// result frame back, with no request to the API server. The channel serves one call at a time: a call that finds
// it busy, or a pod whose image cannot run the multiplexer, is exec'd as before (pod-exec-shell.ts), which shares
// the slots. The guarantees are the per-call exec's: the same marked wrapper, `timeout -s KILL`, the slot swept
// before the result (by the multiplexer, in the pod), the sidecar's give-up at the timeout plus grace, the output
// caps. A channel that breaks fails closed: while idle it is opened again (no request was sent); during a call the
// call is an error, never sent again, and the sidecar execs an end to the channel (its multiplexer killed, its slot
// swept) before it answers.
//
// A channel may also be opened before the first call (`ShellChannels.prepare`): a warm pool pod's sidecar opens one
// to each of its own sandbox pods while it waits for its binding, a Run's sidecar to its stage's sandbox pod once it
// listens. Opening sends the multiplexer its first token and slot, nothing else: nothing of any Run or call goes on
// the channel until a call does. The first call into that pod takes it (or waits for its opening); an early open that
// fails is forgotten, and that call opens one (or is exec'd) exactly as it would have.
import { randomBytes } from "node:crypto";
import { PassThrough, Writable } from "node:stream";
import type { ExecStream, PodExec } from "../../kube/pod-exec.ts";
import { buildBodyCapMessage } from "../../policy/size-caps.ts";
import { MARKED_WRAPPER_SH, MAX_MARKED_SECONDS, PROCESS_SWEEP_SH, isMarkFailure, SWEEP_UNFINISHED_EXIT } from "../../sandbox/process-sweep.ts";
import { buildChannelCommand, buildChannelEndScript, buildChannelHello, buildChannelRequest, buildChannelScript } from "../../sandbox/shell-channel.ts";
import { ChannelReader, type ChannelEvent } from "./channel-frames.ts";
import { createPodExecShell, type PodTarget } from "./pod-exec-shell.ts";
import { createPodSweeper, SlotPool, type PodSweeper } from "./pod-exec-sweep.ts";
import { MAX_SHELL_OUTPUT_BYTES, OutputBudget, type RunStage, type ShellExecutor, type ShellRequest, type ShellResult } from "./shell.ts";

/** Options of the channel executor. */
export interface PodChannelShellOptions {
  readonly exec: PodExec;
  readonly namespace: string;
  readonly target: (stage: RunStage) => PodTarget;
  /** The per-call exec: a busy channel's calls, and pods without one. */
  readonly fallback: ShellExecutor;
  /** The slots the fallback marks with too. */
  readonly slots: SlotPool;
  /** The output all running commands may hold together, the fallback's too (default: its own 8 MiB). */
  readonly budget?: OutputBudget;
  /** How long after the in-sandbox timeout the sidecar stops waiting (default 5 s, the fallback's). */
  readonly graceSeconds?: number;
  /** What sweeps a broken channel's slot after its end (default: {@link createPodSweeper} over `exec`). */
  readonly sweep?: PodSweeper;
  /** How long an opening channel may take to say it is ready (default 30 s). */
  readonly readyMs?: number;
  /** The tokens (default: 128 random bits as hex). */
  readonly token?: () => string;
}

/** One open channel. */
interface Channel {
  readonly socket: ExecStream;
  readonly stdin: PassThrough;
  readonly slot: number;
  readonly pid: number;
  /** The token the next request carries. */
  token: string;
  /** Set once the stream closed or broke: the channel is never written again. */
  dead: string | undefined;
  /** Set once its end (endChannel) began. */
  ended: boolean;
  /** Who waits for the next event: one call at a time. */
  waiter: ((e: ChannelNews) => void) | undefined;
}

/** Per pod and container: its channel (or its opening, begun before a call), whether a call holds it, whether its image can run one at all. */
interface PodState {
  channel: Channel | undefined;
  opening: Promise<void> | undefined;
  busy: boolean;
  unavailable: string | undefined;
}

const failed = (error: string): ShellResult => ({ exitCode: null, stdout: "", stderr: "", timedOut: false, error });

/** The multiplexer's script: built once. */
const CHANNEL_SCRIPT = buildChannelScript(PROCESS_SWEEP_SH, MARKED_WRAPPER_SH, MAX_SHELL_OUTPUT_BYTES);

/** What the channels are opened with: everything of {@link PodChannelShellOptions} but how a stage finds its pod and the fallback. */
export type ShellChannelsOptions = Omit<PodChannelShellOptions, "target" | "fallback">;

/**
 * The channels one sidecar holds, one per sandbox pod and container, with the slots they mark commands with and the
 * output budget they hold output from (which the per-call exec beside them shares). Made before the shell that runs
 * calls on them when they are opened early: a pool pod's sidecar makes them before its binding, and the Run's
 * sidecar that takes over runs its calls on the same ones.
 */
export class ShellChannels {
  readonly exec: PodExec;
  readonly namespace: string;
  readonly slots: SlotPool;
  readonly budget: OutputBudget;
  /** @internal What the channel functions share. */
  readonly ctx: ChannelContext;
  readonly #pods = new Map<string, PodState>();
  #closed = false;

  constructor(opts: ShellChannelsOptions) {
    this.exec = opts.exec;
    this.namespace = opts.namespace;
    this.slots = opts.slots;
    this.budget = opts.budget ?? new OutputBudget(MAX_SHELL_OUTPUT_BYTES);
    this.ctx = { opts, shared: this.budget, grace: opts.graceSeconds ?? 5, sweep: opts.sweep ?? createPodSweeper({ exec: opts.exec, namespace: opts.namespace }), token: opts.token ?? (() => randomBytes(16).toString("hex")) };
  }

  /** @internal The state of one pod's container. */
  state(target: Target): PodState {
    const key = `${target.pod}/${target.container}`;
    const state = this.#pods.get(key) ?? { channel: undefined, opening: undefined, busy: false, unavailable: undefined };
    this.#pods.set(key, state);
    return state;
  }

  /**
   * Opens the channel to `target` in the background, unless one is open or opening, a call holds it, or its image
   * cannot run one: the next call into that pod takes it. Sends nothing but the first frame (a token and a slot).
   */
  prepare(target: Target): void {
    const state = this.state(target);
    if (this.#closed || state.busy || state.opening !== undefined || state.unavailable !== undefined || (state.channel !== undefined && state.channel.dead === undefined)) return;
    state.channel = undefined;
    const opening = openChannel(this.ctx, target, state).then((channel) => {
      state.channel = channel;
      if (this.#closed && channel !== undefined) closeStream(channel);
    }, () => undefined).finally(() => {
      if (state.opening === opening) state.opening = undefined;
    });
    state.opening = opening;
  }

  /**
   * Closes every channel's stream, at the sidecar's stop: a held exec would keep the process alive until the
   * kubelet's SIGKILL. Each multiplexer reads the end of its stdin and exits after its command (whose slot its
   * wrapper sweeps, and the pod's PID 1 after it); no channel is opened again.
   */
  close(): void {
    this.#closed = true;
    for (const state of this.#pods.values()) if (state.channel !== undefined) closeStream(state.channel);
  }
}

/** Ends a channel's stream without the exec that ends it (the sidecar is stopping): its multiplexer sees its stdin end. */
function closeStream(channel: Channel): void {
  channel.dead ??= "closed at the sidecar's stop";
  channel.ended = true;
  channel.socket.close();
  channel.stdin.end();
}

/** A shell executor that keeps one channel per sandbox pod and falls back to an exec per call. */
export function createPodChannelShell(opts: PodChannelShellOptions & { readonly channels?: ShellChannels }): ShellExecutor {
  const channels = opts.channels ?? new ShellChannels(opts);
  const { ctx } = channels;
  const fallback = opts.fallback;
  return {
    label: fallback.label,
    async run(req: ShellRequest): Promise<ShellResult> {
      const target = opts.target(req.stage);
      if ("error" in target) return failed(target.error);
      const state = channels.state(target);
      if (state.busy || state.unavailable !== undefined) return fallback.run(req);
      state.busy = true;
      try {
        // An opening begun before this call (prepare) is waited for: it is this call's channel, or it failed.
        if (state.opening !== undefined) await state.opening;
        if (state.unavailable !== undefined) return await fallback.run(req);
        if (state.channel?.dead !== undefined) state.channel = undefined;
        state.channel ??= await openChannel(ctx, target, state);
        if (state.channel === undefined) return await fallback.run(req);
        const r = await runOnChannel(ctx, target, state.channel, req);
        if (state.channel.dead !== undefined) state.channel = undefined;
        return r;
      } finally {
        state.busy = false;
      }
    },
  };
}

/** What the channel functions share. */
interface ChannelContext {
  readonly opts: ShellChannelsOptions;
  readonly shared: OutputBudget;
  readonly grace: number;
  readonly sweep: PodSweeper;
  readonly token: () => string;
}

type Target = { readonly pod: string; readonly container: string };

/** An event of the channel, or its stream's end. */
type ChannelNews = ChannelEvent | { readonly kind: "closed"; readonly why: string };

/** A sink for output nobody reads. */
const discard = () => new Writable({ write: (_chunk, _enc, done) => done() });

/** Opens a channel and waits for its `ready`; undefined (the call is exec'd) when it cannot be had. */
async function openChannel(ctx: ChannelContext, target: Target, state: PodState): Promise<Channel | undefined> {
  const { opts } = ctx;
  const slot = opts.slots.take();
  if (slot === undefined) return undefined;
  let settleReady: (e: ChannelNews) => void = () => {};
  const ready = new Promise<ChannelNews>((resolve) => {
    settleReady = resolve;
  });
  // The first event answers the hello; once the channel is open, `route` is replaced.
  let route: (e: ChannelNews) => void = (e) => settleReady(e);
  const reader = new ChannelReader((e) => route(e), MAX_SHELL_OUTPUT_BYTES + 1, ctx.shared);
  const stdout = new Writable({ write(chunk: Buffer, _enc, done) {
    reader.push(chunk);
    done();
  } });
  const stdin = new PassThrough();
  let socket: ExecStream;
  try {
    socket = await opts.exec.exec(opts.namespace, target.pod, target.container, buildChannelCommand(CHANNEL_SCRIPT), stdout, discard(), stdin, false);
  } catch {
    opts.slots.release(slot);
    return undefined;
  }
  socket.on("close", () => {
    ctx.shared.release(reader.abandon());
    route({ kind: "closed", why: "the channel's stream closed" });
  });
  const first = ctx.token();
  const timer = setTimeout(() => settleReady({ kind: "closed", why: "the channel did not say it was ready" }), opts.readyMs ?? 30_000);
  stdin.write(buildChannelHello(first, slot));
  const answer = await ready;
  clearTimeout(timer);
  if (answer.kind !== "ready") {
    if (answer.kind === "unavailable") state.unavailable = answer.why;
    route = () => {};
    socket.close();
    stdin.end();
    // No request was sent on it: nothing of a command runs, and the slot is free again.
    opts.slots.release(slot);
    return undefined;
  }
  const channel: Channel = { socket, stdin, slot, pid: answer.pid, token: first, dead: undefined, ended: false, waiter: undefined };
  route = (e) => {
    if (e.kind !== "result") channel.dead ??= e.kind === "closed" || e.kind === "broken" ? e.why : e.kind;
    const w = channel.waiter;
    channel.waiter = undefined;
    if (w !== undefined) return w(e);
    // Nothing was asked: whatever this is, the channel is not the multiplexer's alone any more.
    if (e.kind === "result") ctx.shared.release(e.held);
    channel.dead ??= "the channel wrote while no call was running";
    void endChannel(ctx, target, channel);
  };
  return channel;
}

/** How long the exec that ends a channel may take. */
const END_MS = 10_000;

/** Ends a channel that broke or was given up, once: its multiplexer killed, its slot swept; undefined when done, else why not. */
async function endChannel(ctx: ChannelContext, target: Target, channel: Channel): Promise<string | undefined> {
  if (channel.ended) return undefined;
  channel.ended = true;
  channel.dead ??= "ended";
  channel.socket.close();
  channel.stdin.end();
  const { opts } = ctx;
  const argv = ["sh", "-c", buildChannelEndScript(PROCESS_SWEEP_SH), "leviath-channel-end", String(channel.pid), String(channel.slot)];
  try {
    const ended = await opts.exec.exec(opts.namespace, target.pod, target.container, argv, discard(), null, null, false);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        ended.close();
        resolve();
      }, END_MS);
      ended.on("close", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } catch {
    // The sweep below still ends the slot's processes, whatever the multiplexer does.
  }
  const left = await ctx.sweep(target.pod, target.container, channel.slot);
  opts.slots.release(channel.slot);
  return left;
}

/** Runs one request on an open channel, to its result or the sidecar's give-up. */
async function runOnChannel(ctx: ChannelContext, target: Target, channel: Channel, req: ShellRequest): Promise<ShellResult> {
  const peer = `pod/${target.pod}`;
  const sent = channel.token;
  const next = ctx.token();
  const deadline = Math.min(Math.ceil(req.timeoutSeconds + ctx.grace + 1), MAX_MARKED_SECONDS);
  const frame = buildChannelRequest({ token: sent, next, deadlineSeconds: deadline, timeoutSeconds: req.timeoutSeconds, command: req.command });
  if (frame === undefined) return failed("the command has a NUL byte, which no command line can hold");
  const started = Date.now();
  let gaveUp = false;
  const event = await new Promise<ChannelNews>((resolve) => {
    const timer = setTimeout(() => {
      gaveUp = true;
      channel.waiter = undefined;
      resolve({ kind: "closed", why: "gave up" });
    }, (req.timeoutSeconds + ctx.grace) * 1000);
    channel.waiter = (e) => {
      clearTimeout(timer);
      resolve(e);
    };
    channel.token = next;
    channel.stdin.write(frame);
  });
  if (event.kind === "result" && event.token === sent) {
    ctx.shared.release(event.held);
    return buildResult(peer, event, { timedOut: event.exitCode === 137 && Date.now() - started >= req.timeoutSeconds * 1000 });
  }
  if (event.kind === "result") ctx.shared.release(event.held);
  // Given up, closed, broken, refused, or a result for another request (one a command wrote ahead): the channel is
  // done; what the command left is ended before the call is answered, and the call is never sent again.
  channel.dead ??= "given up";
  const left = await endChannel(ctx, target, channel);
  if (gaveUp) return { exitCode: null, stdout: "", stderr: "", timedOut: true, ...(left === undefined ? {} : { error: left }) };
  const why = event.kind === "result" ? "answered for another request" : event.kind === "closed" || event.kind === "broken" ? event.why : event.kind;
  return failed(`the shell channel to ${peer} broke during the call (${why}); the command may have run, and what it left was ended${left === undefined ? "" : `, but: ${left}`}`);
}

/** Why a result's command left processes that could not be ended, from the sweep's status; undefined when it left none. */
function explainSweep(peer: string, sweep: number): string | undefined {
  if (sweep === 0) return undefined;
  const why = sweep === SWEEP_UNFINISHED_EXIT ? "processes were still being started after 100 passes" : `the sweep exited with ${sweep}`;
  return `the processes the command left in ${peer} could not be ended: ${why}`;
}

/** The call's result from its result frame; `timedOut`: `timeout -s KILL` killed it (exit 137 at or past the timeout). */
function buildResult(peer: string, e: Extract<ChannelEvent, { kind: "result" }>, { timedOut }: { timedOut: boolean }): ShellResult {
  const stdout = e.stdout.toString("utf8");
  const stderr = e.stderr.toString("utf8");
  if (isMarkFailure(e.exitCode, stderr)) return failed(`${stderr.trimEnd()} (${peer}: the node's container runtime must leave its containers' audit login uid unset)`);
  const over = e.dropped || e.stdout.length > MAX_SHELL_OUTPUT_BYTES || e.stderr.length > MAX_SHELL_OUTPUT_BYTES;
  const noExit = e.exitCode === null && !over && !timedOut ? `the command in ${peer} ended without an exit status` : undefined;
  const error = explainSweep(peer, e.sweep) ?? noExit;
  return {
    exitCode: e.exitCode,
    stdout: over ? stdout.slice(0, MAX_SHELL_OUTPUT_BYTES) : stdout,
    stderr: over ? stderr.slice(0, MAX_SHELL_OUTPUT_BYTES) : stderr,
    timedOut,
    ...(over ? { capped: buildBodyCapMessage(peer, MAX_SHELL_OUTPUT_BYTES) } : {}),
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * The cluster shell as the sidecar runs it: a channel per pod, and the per-call exec beside it, marking from the same
 * slots and holding output from the same budget. `channels`: ones made (and maybe opened) before it, else its own.
 */
export function createClusterShell(opts: Omit<PodChannelShellOptions, "fallback" | "slots" | "exec" | "namespace"> & ({ readonly channels: ShellChannels } | { readonly exec: PodExec; readonly namespace: string; readonly slots?: SlotPool })): ShellExecutor {
  const channels = "channels" in opts ? opts.channels : new ShellChannels({ ...opts, slots: opts.slots ?? new SlotPool() });
  const { exec, namespace, slots, budget } = channels;
  const graceSeconds = opts.graceSeconds ?? channels.ctx.opts.graceSeconds;
  const fallback = createPodExecShell({ exec, namespace, target: opts.target, slots, budget, ...(graceSeconds === undefined ? {} : { graceSeconds }) });
  return createPodChannelShell({ exec, namespace, target: opts.target, fallback, slots, channels });
}
