// One HTTP exchange with a provider: retried on 429 and 5xx (and on a connection that failed before any answer)
// with exponential backoff, or exactly the wait the provider asked for in `retry-after`; any other status is a
// failure whose text quotes the provider's error body, read under the 64 MiB cap.
import { CapExceededError } from "../../../io/capped-fetch.ts";
import { readCappedText } from "./capped-read.ts";
import { ProviderError, type ModelTurn } from "./types.ts";

/** How a provider client retries and waits (injected so tests need not wait). */
export interface RetryPolicy {
  /** Retries after the first attempt (default 4). */
  readonly maxRetries: number;
  /** The first backoff; doubled each retry, with up to 50 % jitter (default 500 ms). */
  readonly baseDelayMs: number;
  /** No wait is longer than this, `retry-after` included; a longer `retry-after` fails at once (default 60 s). */
  readonly maxDelayMs: number;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random: () => number;
}

/** Waits `ms`, or rejects when `signal` aborts. */
export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(timer); reject(signal?.reason as Error); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The defaults: four retries, 0.5 s doubling, at most 60 s. */
export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 60_000, sleep: sleepFor, random: Math.random };

/** `retry-after` as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value.trim()) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** True for the statuses worth another attempt: rate limited, overloaded or a server error. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 408 || status >= 500;
}

/** What one request needs. */
export interface ProviderRequest {
  /** For messages: `anthropic`, `openai`, ... */
  readonly provider: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  /** Per attempt, until the headers arrive (default 600 s: a long completion is slow to start streaming). */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

function describeNetworkError(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

/** The first non-retryable answer (a 2xx is returned with its body unread), or a ProviderError. */
export async function postToProvider(req: ProviderRequest, retry: RetryPolicy = DEFAULT_RETRY, now: () => number = Date.now): Promise<Response> {
  const host = new URL(req.url).host;
  for (let attempt = 0; ; attempt++) {
    const sent = await sendOnce(req, host);
    if ("res" in sent && sent.res.ok) return sent.res;
    const failed = "res" in sent ? await judgeFailedAnswer(req, sent.res, { host, retry, now }) : { failure: sent.failure, status: undefined, waitMs: undefined };
    if (attempt >= retry.maxRetries) throw new ProviderError(`${failed.failure} (gave up after ${attempt + 1} attempts)`, failed.status);
    const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** attempt * (1 + retry.random() / 2));
    await retry.sleep(failed.waitMs ?? backoff, req.signal);
  }
}

/** One attempt: the answer, or why none came (the caller's own abort is thrown). */
async function sendOnce(req: ProviderRequest, host: string): Promise<{ res: Response } | { failure: string }> {
  try {
    const signal = req.signal ? AbortSignal.any([req.signal, AbortSignal.timeout(req.timeoutMs)]) : AbortSignal.timeout(req.timeoutMs);
    return { res: await fetch(req.url, { method: "POST", headers: { "content-type": "application/json", ...req.headers }, body: JSON.stringify(req.body), signal }) };
  } catch (err) {
    if (req.signal?.aborted) throw err;
    return { failure: `${req.provider} at ${host} did not answer (${describeNetworkError(err)})` };
  }
}

/**
 * A non-2xx answer: what it said and how long it asks to wait before the next attempt. Thrown as a ProviderError
 * when no attempt can help: a status not worth retrying, or a Retry-After longer than the runtime waits.
 */
async function judgeFailedAnswer(req: ProviderRequest, res: Response, at: { host: string; retry: RetryPolicy; now: () => number }): Promise<{ failure: string; status: number; waitMs: number | undefined }> {
  const text = await readCappedText(res.body, at.host).catch((err: unknown) => (err instanceof CapExceededError ? err.message : ""));
  const failure = `${req.provider} answered HTTP ${res.status}: ${text.slice(0, 2000)}`;
  if (!isRetryableStatus(res.status)) throw new ProviderError(failure, res.status);
  const waitMs = parseRetryAfter(res.headers.get("retry-after"), at.now());
  if (waitMs !== undefined && waitMs > at.retry.maxDelayMs) {
    throw new ProviderError(`${failure} (retry-after ${Math.ceil(waitMs / 1000)} s is longer than the runtime waits, ${at.retry.maxDelayMs / 1000} s)`, res.status);
  }
  return { failure, status: res.status, waitMs };
}

/** Settings every provider client takes. */
export interface ProviderOptions {
  /** `anthropic`, `openai`, or the name a self-hosted one goes by. */
  readonly name?: string;
  readonly baseUrl?: string;
  /** None for a local server that needs no key. */
  readonly apiKey?: string | undefined;
  /** Ask for a streamed reply (default true). */
  readonly stream?: boolean;
  /** Per attempt until the headers arrive (default 600 s: a long completion is slow to start). */
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
}

/** How one protocol reads its reply: a streamed body, or a buffered one already read under the cap. */
export interface ReplyReaders {
  readonly streamed: (res: Response, host: string) => Promise<ModelTurn>;
  readonly buffered: (text: string, host: string) => ModelTurn;
}

/** One turn over HTTP: post (with retries), then read the reply as the provider sent it, caps enforced. */
export async function completeOverHttp(
  req: Omit<ProviderRequest, "timeoutMs"> & { readonly stream: boolean; readonly timeoutMs?: number | undefined },
  retry: RetryPolicy | undefined,
  read: ReplyReaders,
): Promise<ModelTurn> {
  const host = new URL(req.url).host;
  const res = await postToProvider({ ...req, timeoutMs: req.timeoutMs ?? 600_000, headers: { ...req.headers, ...(req.stream ? { accept: "text/event-stream" } : {}) } }, retry ?? DEFAULT_RETRY);
  try {
    if (req.stream && (res.headers.get("content-type") ?? "").includes("text/event-stream")) return await read.streamed(res, host);
    return read.buffered(await readCappedText(res.body, host), host);
  } catch (err) {
    if (err instanceof CapExceededError) throw new ProviderError(err.message);
    throw err;
  }
}
