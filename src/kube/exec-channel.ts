// pods/exec over the API server's WebSocket, as kubectl and client-go speak it, without @kubernetes/client-node:
// the subprotocol `v5.channel.k8s.io`, else `v4.channel.k8s.io`; every binary message starts with its channel byte
// (0 stdin, 1 stdout, 2 stderr, 3 the final status as a JSON metav1.Status, 4 a terminal resize). v5 adds channel
// 255, a stream's end: the client sends [255, 0] to close the command's stdin and keep reading its output, which v4
// can only do by closing the connection.
import type { IncomingMessage } from "node:http";
import type { Readable, Writable } from "node:stream";
import { WebSocket } from "ws";
import { MAX_STREAM_FRAME_BYTES } from "../policy/size-caps.ts";
import { parseApiError } from "./errors.ts";
import type { UpgradeTarget } from "./https-client.ts";

/** The subprotocols offered, preferred first. */
export const EXEC_SUBPROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"] as const;
/** The channel byte of each stream. */
export const EXEC_CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;

/**
 * The largest message accepted: twice the executors' cap on one frame (the seed's 8 MiB) and the channel byte, so a
 * frame they refuse still reaches them and they name it; ws refuses a larger one before buffering more of it, and the
 * exec then ends without a status.
 */
const MAX_EXEC_MESSAGE_BYTES = 2 * MAX_STREAM_FRAME_BYTES + 1;
/** The part of a refused upgrade's body read for the server's `Status` message. */
const MAX_REFUSAL_BYTES = 64 * 1024;
/**
 * How long the upgrade may take: the API server reaches the kubelet, which starts the exec in the container, before it
 * answers (client-node set no bound; a hung upgrade must not hold a call forever).
 */
const HANDSHAKE_TIMEOUT_MS = 60_000;
/** Stdin bytes queued on the socket past which stdin is paused until they are written. */
const STDIN_HIGH_WATER_BYTES = 1024 * 1024;

/** The fields of the final metav1.Status the executors read (exit code in `details.causes`). */
export interface ExecStatus {
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { causes?: { reason?: string; message?: string; field?: string }[] };
}

/** An exec in progress: `close` ends it; "close" says it ended (after the status, when the command finished). */
export interface ExecStream {
  on(event: "close", listener: () => void): unknown;
  close(): void;
}

/** What to exec, and which streams are attached. */
export interface ExecRequest {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  readonly command: string | readonly string[];
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

/** The exec subresource's path with its query: one `command` per argument, the streams asked for. */
export function buildExecPath(r: ExecRequest): string {
  const query = new URLSearchParams();
  for (const arg of typeof r.command === "string" ? [r.command] : r.command) query.append("command", arg);
  query.set("container", r.container);
  for (const flag of ["stdin", "stdout", "stderr", "tty"] as const) query.set(flag, String(r[flag]));
  return `/api/v1/namespaces/${encodeURIComponent(r.namespace)}/pods/${encodeURIComponent(r.pod)}/exec?${query}`;
}

/** One message: the channel byte, then the data. */
export function buildChannelFrame(channel: number, data: Buffer | string, encoding: BufferEncoding = "utf8"): Buffer {
  const payload = typeof data === "string" ? Buffer.from(data, encoding) : data;
  const frame = Buffer.allocUnsafe(payload.byteLength + 1);
  frame[0] = channel;
  payload.copy(frame, 1);
  return frame;
}

/** The status channel's payload; one that is not a Status object is a failure, never a success. */
export function readStatusFrame(payload: Buffer): ExecStatus {
  try {
    const status: unknown = JSON.parse(payload.toString("utf8"));
    if (typeof status === "object" && status !== null && !Array.isArray(status)) return status as ExecStatus;
  } catch {
    // Falls through to the failure below.
  }
  return { status: "Failure", message: "the exec's status from the API server is not a Status object" };
}

/** The streams of one exec. Output streams are ended when the status arrives (or the server ends them, v5). */
export interface ExecStreams {
  readonly stdout: Writable | null;
  readonly stderr: Writable | null;
  readonly stdin: Readable | null;
  readonly onStatus?: (status: ExecStatus) => void;
}

/** Opens the exec's WebSocket; resolves once it is open (the command runs), rejects with why it was refused. */
export function openExecChannel(target: UpgradeTarget, streams: ExecStreams): Promise<WebSocket> {
  const ws = new WebSocket(target.url, [...EXEC_SUBPROTOCOLS], {
    ...target.tls, headers: { ...target.headers }, maxPayload: MAX_EXEC_MESSAGE_BYTES, handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    // The API server's frames are output already in flight; compressing them costs a zlib context per exec.
    perMessageDeflate: false,
  });
  relayOutput(ws, streams);
  return new Promise((resolve, reject) => {
    let opened = false;
    // After the open, an error is followed by "close", which ends the exec without a status: the executors say so.
    ws.on("error", (err) => {
      if (!opened) reject(new Error(err.message));
    });
    ws.on("unexpected-response", (_req, res) => {
      void readRefusal(res).then((why) => {
        reject(new Error(why));
        ws.terminate();
      });
    });
    ws.on("open", () => {
      opened = true;
      if (streams.stdin) relayInput(ws, streams.stdin);
      resolve(ws);
    });
  });
}

/** `Unexpected server response: <code>` (what ws and client-node say), with the server's own message when it sent one. */
async function readRefusal(res: IncomingMessage): Promise<string> {
  const what = `Unexpected server response: ${res.statusCode ?? 0}`;
  let body = "";
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      body += chunk.toString("utf8");
      if (body.length >= MAX_REFUSAL_BYTES) break;
    }
  } catch {
    return what;
  }
  return body.trim() === "" ? what : parseApiError(res.statusCode ?? 0, body.slice(0, MAX_REFUSAL_BYTES), what).message;
}

function relayOutput(ws: WebSocket, streams: ExecStreams): void {
  const end = (stream: Writable | null) => {
    if (stream && !stream.writableEnded) stream.end();
  };
  const write = (stream: Writable | null, payload: Buffer) => {
    if (stream && !stream.writableEnded && payload.byteLength > 0) stream.write(payload);
  };
  ws.on("message", (data, isBinary) => {
    // Only the channel protocols were offered, so text is not ours to read; an empty message carries nothing.
    if (!isBinary || data.byteLength === 0) return;
    const payload = data.subarray(1);
    // Non-empty, so the first byte is there.
    switch (data[0]!) {
      case EXEC_CHANNEL.stdout: return write(streams.stdout, payload);
      case EXEC_CHANNEL.stderr: return write(streams.stderr, payload);
      case EXEC_CHANNEL.status: {
        if (payload.byteLength === 0) return;
        end(streams.stdout);
        end(streams.stderr);
        streams.onStatus?.(readStatusFrame(payload));
        return ws.close();
      }
      case EXEC_CHANNEL.close: {
        if (payload[0] === EXEC_CHANNEL.stdout) end(streams.stdout);
        if (payload[0] === EXEC_CHANNEL.stderr) end(streams.stderr);
        return;
      }
      // A channel this protocol does not send to clients: the exec ends without a status, which is an error.
      default: return ws.close(1002, `unexpected channel ${data[0]}`);
    }
  });
}

function relayInput(ws: WebSocket, stdin: Readable): void {
  const onData = (chunk: Buffer | string) => {
    ws.send(buildChannelFrame(EXEC_CHANNEL.stdin, chunk, stdin.readableEncoding ?? "utf8"), () => {
      if (stdin.isPaused() && ws.bufferedAmount < STDIN_HIGH_WATER_BYTES) stdin.resume();
    });
    if (ws.bufferedAmount >= STDIN_HIGH_WATER_BYTES) stdin.pause();
  };
  const onEnd = () => {
    if (ws.readyState !== WebSocket.OPEN) return;
    // v5 closes stdin alone; v4 has no way to but closing the connection (as kubectl does).
    if (ws.protocol === EXEC_SUBPROTOCOLS[0]) ws.send(Buffer.from([EXEC_CHANNEL.close, EXEC_CHANNEL.stdin]));
    else ws.close();
  };
  stdin.on("data", onData);
  stdin.once("end", onEnd);
  ws.once("close", () => {
    stdin.off("data", onData);
    stdin.off("end", onEnd);
  });
}
