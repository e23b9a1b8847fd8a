// The sidecar's side of a shell channel's framing (src/sandbox/shell-channel.ts): the multiplexer's stdout read as
// lines (`leviath-channel ready|unavailable|refused|result ...`) and, after a result line, exactly the bytes it
// announces. Anything else on the stream is a broken channel; nothing is guessed or skipped.
import { CHANNEL_WORD } from "../../sandbox/shell-channel.ts";

/** The longest line the multiplexer writes (a result line is under 120 bytes). */
const MAX_LINE_BYTES = 512;

/** A result line's fields: its token, exit code (`-`: none), the sweep's status and the two streams' lengths. */
const RESULT_FIELDS = /^[0-9a-f]+ (\d+|-) \d+ \d+ \d+$/;

/** What the multiplexer said. */
export type ChannelEvent =
  | { readonly kind: "ready"; readonly pid: number }
  | { readonly kind: "unavailable"; readonly why: string }
  | { readonly kind: "refused" }
  | { readonly kind: "result"; readonly token: string; readonly exitCode: number | null; readonly sweep: number; readonly stdout: Buffer; readonly stderr: Buffer; readonly dropped: boolean; readonly held: number }
  | { readonly kind: "broken"; readonly why: string };

/** Where a result's bytes are held: what every running command may hold together (shell.ts's OutputBudget). */
export interface ChannelBudget {
  take(bytes: number): boolean;
}

/** A result line's fields, before its bytes arrive. */
interface Pending {
  readonly token: string;
  readonly exitCode: number | null;
  readonly sweep: number;
  readonly lengths: readonly [number, number];
  readonly parts: [Buffer[], Buffer[]];
  received: number;
  /** What was taken from the budget for it. */
  held: number;
  /** The budget refused a part: the rest is read and dropped, so the framing holds. */
  dropped: boolean;
}

/** Reads the multiplexer's stdout; `emit` gets each event in order, and nothing after `broken`. A result's `held`
 * bytes were taken from the budget: the caller gives them back. */
export class ChannelReader {
  readonly #emit: (e: ChannelEvent) => void;
  readonly #maxStream: number;
  readonly #budget: ChannelBudget;
  #line: Buffer[] = [];
  #lineBytes = 0;
  #pending: Pending | undefined;
  #broken = false;

  /** `maxStream`: the most bytes one stream of a result may announce (the multiplexer's `head -c`). */
  constructor(emit: (e: ChannelEvent) => void, maxStream: number, budget: ChannelBudget) {
    this.#emit = emit;
    this.#maxStream = maxStream;
    this.#budget = budget;
  }

  /** Feeds a chunk of the stream. */
  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.#broken) at = this.#pending === undefined ? this.#readLine(chunk, at) : this.#readBody(chunk, at);
  }

  #break(why: string): number {
    this.#broken = true;
    this.#emit({ kind: "broken", why });
    return Number.MAX_SAFE_INTEGER;
  }

  #readLine(chunk: Buffer, at: number): number {
    const nl = chunk.indexOf(0x0a, at);
    const end = nl === -1 ? chunk.length : nl;
    this.#lineBytes += end - at;
    if (this.#lineBytes > MAX_LINE_BYTES) return this.#break(`a line of the channel passed ${MAX_LINE_BYTES} bytes`);
    this.#line.push(chunk.subarray(at, end));
    if (nl === -1) return chunk.length;
    const line = Buffer.concat(this.#line).toString("utf8");
    this.#line = [];
    this.#lineBytes = 0;
    const event = this.#parseLine(line);
    if (event === undefined) return this.#break(`the channel wrote an unexpected line: ${JSON.stringify(line.slice(0, 80))}`);
    if (event !== "pending") this.#emit(event);
    return nl + 1;
  }

  /** The event a line is, "pending" when a result's bytes follow, undefined when it is none. */
  #parseLine(line: string): ChannelEvent | "pending" | undefined {
    const [word, kind, ...rest] = line.split(" ");
    if (word !== CHANNEL_WORD) return undefined;
    if (kind === "ready" && rest.length === 1 && /^[1-9]\d*$/.test(rest[0]!)) return { kind: "ready", pid: Number(rest[0]) };
    if (kind === "unavailable") return { kind: "unavailable", why: rest.join(" ") };
    if (kind === "refused" && rest.length === 0) return { kind: "refused" };
    if (kind !== "result" || !RESULT_FIELDS.test(rest.join(" "))) return undefined;
    const [token, rc, sweep, ol, el] = rest as [string, string, string, string, string];
    const lengths = [Number(ol), Number(el)] as const;
    if (lengths.some((n) => n > this.#maxStream)) return undefined;
    this.#pending = { token, exitCode: rc === "-" ? null : Number(rc), sweep: Number(sweep), lengths, parts: [[], []], received: 0, held: 0, dropped: false };
    if (lengths[0] + lengths[1] === 0) this.#finish();
    return "pending";
  }

  #readBody(chunk: Buffer, at: number): number {
    const p = this.#pending!;
    const total = p.lengths[0] + p.lengths[1];
    const take = Math.min(chunk.length - at, total - p.received);
    // The part of the take that belongs to stdout, then to stderr.
    const toOut = Math.max(0, Math.min(take, p.lengths[0] - p.received));
    this.#keep(p, 0, chunk.subarray(at, at + toOut));
    this.#keep(p, 1, chunk.subarray(at + toOut, at + take));
    p.received += take;
    if (p.received === total) this.#finish();
    return at + take;
  }

  #keep(p: Pending, which: 0 | 1, bytes: Buffer): void {
    if (bytes.length === 0 || p.dropped) return;
    if (!this.#budget.take(bytes.length)) {
      p.dropped = true;
      return;
    }
    p.held += bytes.length;
    // A copy: the chunk's buffer is the WebSocket message's, which may be far larger than this part.
    p.parts[which].push(Buffer.from(bytes));
  }

  #finish(): void {
    const p = this.#pending!;
    this.#pending = undefined;
    this.#emit({ kind: "result", token: p.token, exitCode: p.exitCode, sweep: p.sweep, stdout: Buffer.concat(p.parts[0]), stderr: Buffer.concat(p.parts[1]), dropped: p.dropped, held: p.held });
  }

  /** Ends reading (the stream closed): what an unfinished result took from the budget, for the caller to give back. */
  abandon(): number {
    this.#broken = true;
    const held = this.#pending?.held ?? 0;
    this.#pending = undefined;
    return held;
  }
}
