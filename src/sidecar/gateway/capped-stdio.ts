// An MCP stdio transport whose reads are capped (taint-gate spec §10): one line of the server's stdout, newline
// included, is at most 1 MiB. Past it the server is killed and the connection is over (nothing more is read);
// the failure names the cap, with the tail of the server's stderr. An oversized stderr line is dropped. The
// server is a `StdioProcess`: a local process standalone, a pods/exec stream into a sandbox pod in a cluster.
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { buildMcpReadFailureMessage, MAX_MCP_LINE_BYTES } from "../../policy/size-caps.ts";

/** How much of the server's stderr is kept for a failure message. */
const STDERR_TAIL_BYTES = 2048;

/** A started stdio server, wherever it runs: its three streams, its end, and how to end it with all it started. */
export interface StdioProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Called once when the server ended or its connection did. */
  onClose(listener: () => void): void;
  /** Called when starting or talking to it failed. */
  onError(listener: (error: Error) => void): void;
  /** Ends the server and every process it started; nothing more is read. */
  kill(): void;
  /** Whether a server started now would run elsewhere (the stage moved to another sandbox): it is then restarted there. */
  moved?(): boolean;
}

/** Splits a byte stream into lines of at most `cap` bytes (newline included). */
class LineReader {
  #parts: Buffer[] = [];
  #size = 0;
  readonly #cap: number;
  readonly #onLine: (line: string) => void;
  readonly #onOver: () => void;
  constructor(cap: number, onLine: (line: string) => void, onOver: () => void) {
    this.#cap = cap;
    this.#onLine = onLine;
    this.#onOver = onOver;
  }

  /** Feeds a chunk; false once a line passed the cap (the reader takes nothing more). */
  push(chunk: Buffer): boolean {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl + 1;
      if (this.#size + (end - start) > this.#cap) {
        this.#onOver();
        return false;
      }
      if (nl === -1) {
        if (end > start) this.#parts.push(chunk.subarray(start));
        this.#size += end - start;
        return true;
      }
      this.#parts.push(chunk.subarray(start, nl));
      const line = Buffer.concat(this.#parts).toString("utf8");
      this.#parts = [];
      this.#size = 0;
      start = end;
      this.#onLine(line);
    }
  }
}

/** A transport over a started server process. */
export class CappedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  /** Set when the connection was dropped at a cap: the message a call fails with. */
  capFailure: string | undefined;
  readonly #child: StdioProcess;
  readonly #cap: number;
  #stderr = "";
  #closed = false;

  /** A transport over a started server. */
  constructor(child: StdioProcess, cap: number = MAX_MCP_LINE_BYTES) {
    this.#child = child;
    this.#cap = cap;
  }

  /** Starts reading the server's output. */
  async start(): Promise<void> {
    const out = new LineReader(this.#cap, (line) => this.#deliver(line), () => {
      this.capFailure = buildMcpReadFailureMessage(this.#stderr.trimEnd(), this.#cap);
      this.onerror?.(new Error(this.capFailure));
      void this.close();
    });
    this.#child.stdout.on("data", (chunk: Buffer) => {
      if (!this.#closed) out.push(chunk);
    });
    const err = new LineReader(this.#cap, (line) => {
      this.#stderr = `${this.#stderr}${line}\n`.slice(-STDERR_TAIL_BYTES);
    }, () => undefined);
    let errOk = true;
    this.#child.stderr.on("data", (chunk: Buffer) => {
      // An oversized stderr line is dropped; draining goes on so the server never blocks on a full pipe.
      if (errOk) errOk = err.push(chunk);
    });
    this.#child.onError((e) => this.onerror?.(e));
    this.#child.onClose(() => void this.close());
    this.#child.stdin.on("error", (e) => this.onerror?.(e));
  }

  #deliver(line: string): void {
    if (line.trim() === "") return;
    try {
      this.onmessage?.(JSONRPCMessageSchema.parse(JSON.parse(line)));
    } catch (e) {
      this.onerror?.(e as Error);
    }
  }

  /** Writes one message as a line. */
  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#closed) return reject(new Error("the MCP server's connection is closed"));
      this.#child.stdin.write(`${JSON.stringify(message)}\n`, (e) => (e ? reject(e) : resolve()));
    });
  }

  /** Whether the server should now run elsewhere (see {@link StdioProcess.moved}). */
  moved(): boolean {
    return this.#child.moved?.() ?? false;
  }

  /** Ends the server (with everything it started); nothing more is read. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#child.stdout.destroy();
    this.#child.stdin.destroy();
    this.#child.kill();
    this.onclose?.();
  }
}
