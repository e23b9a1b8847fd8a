// The one client of the sidecar's /v1 API (docs/sidecar-api.md, docs/runtime.md), the runtime side's: the reference
// runtime (src/runtime/reference), `leviath adapter` and `leviath bound-exec` all talk to the sidecar through it, over
// one transport (base URL, the runtime token, a timeout per request, replies read under the 64 MiB cap), every answer
// parsed with the contract's schemas (src/api/sidecar-contract.ts). Tool calls fail closed: a refused connection, a
// timeout, a reset, a body over the cap, malformed JSON or an answer that does not fit the request all become a
// deny, and only a 200 whose body is a well-formed allow or run for the same call id ever lets a tool run. The other
// calls (health, stage, status, context, seeds) throw a SidecarLinkError on a sidecar that refuses or answers
// nonsense: never ignored. The binding ask of a warm pool's pod says what came back, and its caller decides.
import type { z } from "zod";
import { readBoundedText } from "../io/bounded-text.ts";
import { CapExceededError } from "../io/capped-fetch.ts";
import { buildBodyCapMessage, MAX_BODY_BYTES } from "../policy/size-caps.ts";
import { BINDING_ROUTE } from "../api/binding.ts";
import {
  AllowAnswerSchema, AskAnswerSchema, buildRefusalMessage, CurrentStageAnswerSchema, DEADLINE_HEADER, DenyAnswerSchema, EntriesAnswerSchema, EvictAnswerSchema,
  HealthAnswerSchema, LabelAnswerSchema, parseRefusalCode, RefusalAnswerSchema, RunAnswerSchema, SeedFilledSchema, StageAnswerSchema, StatusAnswerSchema,
  WarningsAnswerSchema, type EntryRef,
} from "../api/sidecar-contract.ts";

/** A /v1 request other than a tool call that failed: the path, the status and what the sidecar said. */
export class SidecarLinkError extends Error {
  override readonly name = "SidecarLinkError";
}

/** A command seed runs up to the policy's shell timeout (default 60 s; the sidecar stops it): wait longer than any sane one. */
const SEED_WAIT_MS = 15 * 60_000;

/** What `POST /v1/seeds` said: the content and its label, or the sidecar's refusal (code and message). */
export type SeedAnswer = { readonly ok: true; readonly content: string; readonly label: string; readonly taint: string } | { readonly ok: false; readonly status: number; readonly code: string; readonly message: string };

/**
 * One ask for a warm pool pod's binding: the 200's body (the binding, which its caller parses with api/binding.ts's
 * schema; undefined when not JSON), a wait (no answer, the token refused, or the sidecar not bound yet), or a refusal.
 */
export type BindingAsk =
  | { readonly kind: "answer"; readonly body: unknown }
  | { readonly kind: "wait"; readonly unreachable: boolean }
  | { readonly kind: "refused"; readonly message: string };

/** Options of {@link createSidecarClient}. */
export interface SidecarClientOptions {
  /** `http://127.0.0.1:8181`. */
  readonly baseUrl: string;
  /** Per request, headers and body included (default 10 s). A wait adds its own duration. */
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** The runtime's per-start secret (the runtime token file's contents); see also `setToken`. */
  readonly token?: string | undefined;
  /**
   * Called when the sidecar answers 401 (it refused the token: a restarted sidecar wrote a new one) with the refused
   * token: the token to send instead (read again from its file), or undefined. The request is sent once more with it.
   */
  readonly refreshToken?: (refused: string | undefined) => string | undefined;
  /**
   * Called when a request's connection was refused (nothing reached the sidecar: it is starting again); resolves once
   * it answers again, and the request is sent once more. Unset: the refusal is the request's failure.
   */
  readonly whenRefused?: () => Promise<void>;
  /** Milliseconds since the epoch (the call's deadline is sent with it; the health wait's clock). */
  readonly clock?: () => number;
  /** Sent with every tool call and wait: the W3C trace context of the run's span (`traceparent`), when it is traced. */
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** What the runtime does with a call. */
export type ClientAnswer =
  | { readonly decision: "allow"; readonly id: string; readonly tool: string; readonly result: string; readonly isError: boolean; readonly label: string; readonly taint: string }
  | { readonly decision: "run"; readonly id: string; readonly tool: string; readonly target?: string | undefined }
  | { readonly decision: "ask"; readonly id: string; readonly tool: string; readonly approvalId: string }
  | { readonly decision: "deny"; readonly id: string; readonly tool: string; readonly code: string; readonly message: string; readonly failedClosed: boolean };

/** A call as the runtime sends it. */
export interface ClientCall {
  readonly id: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly entry?: EntryRef;
}

/** The client. */
export interface SidecarClient {
  readonly baseUrl: string;
  /** Sets the runtime token once it can be read (the health check needs none). */
  setToken(token: string): void;
  callTool(call: ClientCall): Promise<ClientAnswer>;
  /** Waits up to `seconds` for a pending call's answer. */
  waitForCall(id: string, tool: string, seconds: number): Promise<ClientAnswer>;
  /** Tells the sidecar the runtime ran a call decided `run` (its result goes in the call's entry); throws when unsent. */
  reportResult(id: string): Promise<void>;
  waitHealthy(timeoutMs: number, sleep?: (ms: number) => Promise<void>): Promise<void>;
  enterStage(stage: string): Promise<z.infer<typeof StageAnswerSchema>>;
  /** The stage the run is in. */
  readStage(): Promise<z.infer<typeof CurrentStageAnswerSchema>>;
  /** What the runtime reads of the run's status (whether a result was handed over). */
  readStatus(): Promise<z.infer<typeof StatusAnswerSchema>>;
  /** The context entries the sidecar holds, with their labels. */
  listEntries(): Promise<z.infer<typeof EntriesAnswerSchema>>;
  /** Labels entries the runtime wrote; `text` (an input's) is what makes a value trusted for argument provenance. */
  label(entries: readonly (EntryRef & { source: "input" | "model"; text?: string })[]): Promise<z.infer<typeof LabelAnswerSchema>>;
  evict(entries: readonly EntryRef[]): Promise<z.infer<typeof EvictAnswerSchema>>;
  /** Tells the sidecar what the runtime does not honour (shown in the Run's status while it runs). */
  reportWarnings(warnings: readonly string[]): Promise<z.infer<typeof WarningsAnswerSchema>>;
  /** Fills a region through the sidecar, labelling `entry` with what its sources deserve. */
  seed(region: string, seed: Record<string, unknown>, entry: EntryRef): Promise<SeedAnswer>;
  /** Asks once for the binding (`POST /v1/binding`), waiting up to `waitMs` (an unbound sidecar holds the ask). */
  askBinding(waitMs: number): Promise<BindingAsk>;
}

function failClosed(id: string, tool: string, code: "sidecar-unavailable" | "sidecar-invalid-response", why: string): ClientAnswer {
  return { decision: "deny", id, tool, code, message: buildRefusalMessage(code, tool, why), failedClosed: true };
}

/** Maps an HTTP answer to what the runtime may do; anything unexpected is a deny. */
export function interpretAnswer(id: string, tool: string, status: number, body: unknown): ClientAnswer {
  const sameCall = (b: { id: string; tool: string }) => b.id === id && b.tool === tool;
  if (status === 200) {
    const allow = AllowAnswerSchema.safeParse(body);
    if (allow.success && sameCall(allow.data)) return { ...allow.data, decision: "allow" };
    const run = RunAnswerSchema.safeParse(body);
    if (run.success && sameCall(run.data)) return { decision: "run", id, tool, target: run.data.target };
    return failClosed(id, tool, "sidecar-invalid-response", "a 200 that is not an allow for this call");
  }
  if (status === 202) {
    const ask = AskAnswerSchema.safeParse(body);
    if (ask.success && sameCall(ask.data)) return { decision: "ask", id, tool, approvalId: ask.data.approval.id };
    return failClosed(id, tool, "sidecar-invalid-response", "a 202 that is not an ask for this call");
  }
  const deny = DenyAnswerSchema.safeParse(body);
  if (deny.success) return { decision: "deny", id, tool, code: deny.data.code, message: deny.data.message, failedClosed: status >= 500 };
  return failClosed(id, tool, "sidecar-invalid-response", `HTTP ${status}`);
}

/** One request and its reply, read whole under the cap; a transport failure or a cap throws. */
type Send = (method: string, path: string, opts: { body?: string; headers?: Record<string, string>; waitMs: number }) => Promise<{ status: number; text: string }>;

/** How a request finds its token: the current one, and (on a 401) a new one to try once, if there is one. */
interface TokenAccess {
  readonly current: () => string | undefined;
  readonly refresh?: ((refused: string | undefined) => string | undefined) | undefined;
  readonly whenRefused?: (() => Promise<void>) | undefined;
}

/** Whether a request failed before reaching the sidecar: its connection was refused. */
export function isRefusedConnection(err: unknown): boolean {
  return (err as { cause?: { code?: unknown } } | undefined)?.cause?.code === "ECONNREFUSED";
}

const HEALTH_PATH = "/v1/healthz";
/**
 * How often `waitHealthy` asks: a refused loopback connection costs next to nothing, and the sidecar is told ready
 * within this of its listen (a Run's first call waits on it).
 */
const HEALTH_POLL_MS = 25;

function createSend(base: string, cap: number, token: TokenAccess): Send {
  const host = new URL(base).host;
  return async (method, path, opts) => {
    const attempt = (t: string | undefined) =>
      fetch(`${base}${path}`, { method, headers: { ...(t ? { authorization: `Bearer ${t}` } : {}), ...opts.headers }, body: opts.body, signal: AbortSignal.timeout(opts.waitMs) });
    let sent = token.current();
    let res: Response;
    try {
      res = await attempt(sent);
    } catch (err) {
      // Refused: nothing reached the sidecar (it is starting again). Once it answers its health check, once more.
      if (token.whenRefused === undefined || path === HEALTH_PATH || !isRefusedConnection(err)) throw err;
      await token.whenRefused();
      sent = token.current();
      res = await attempt(sent);
    }
    // A 401 is a refusal before anything ran (the token is checked first), so the request may go again as it was.
    const fresh = res.status === 401 ? token.refresh?.(sent) : undefined;
    if (fresh !== undefined && fresh !== sent) {
      await res.body?.cancel();
      res = await attempt(fresh);
    }
    return { status: res.status, text: await readBoundedText(res.body, cap, () => new CapExceededError(buildBodyCapMessage(host, cap))) };
  };
}

/** The calls besides tool calls: a failure is a SidecarLinkError (a cap keeps its own error). */
function createLinkCalls(send: Send, host: string, timeoutMs: number, clock: () => number): Omit<SidecarClient, "baseUrl" | "setToken" | "callTool" | "waitForCall"> {
  const json = async (method: string, path: string, body: unknown, waitMs = timeoutMs): Promise<{ status: number; parsed: unknown; text: string }> => {
    let reply: { status: number; text: string };
    try {
      reply = await send(method, path, { waitMs, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) });
    } catch (err) {
      if (err instanceof CapExceededError) throw err;
      const e = err as Error & { cause?: { code?: string } };
      throw new SidecarLinkError(`${method} ${path}: the sidecar at ${host} did not answer (${e.cause?.code ?? e.message})`);
    }
    try {
      return { ...reply, parsed: JSON.parse(reply.text) as unknown };
    } catch {
      throw new SidecarLinkError(`${method} ${path}: HTTP ${reply.status}, not JSON`);
    }
  };
  const request = async <T>(method: string, path: string, body: unknown, schema: z.ZodType<T>): Promise<T> => {
    const { status, parsed, text } = await json(method, path, body);
    if (status !== 200) throw new SidecarLinkError(`${method} ${path}: HTTP ${status}: ${text.slice(0, 500)}`);
    const ok = schema.safeParse(parsed);
    if (!ok.success) throw new SidecarLinkError(`${method} ${path}: an answer that does not fit (${ok.error.issues[0]?.message ?? "invalid"})`);
    return ok.data;
  };
  return {
    async reportResult(id) {
      // Any answer will do: the call was decided `run`, and the sidecar labels the entry it named.
      await send("POST", `/v1/tool-calls/${encodeURIComponent(id)}/result`, { body: "{}", headers: { "content-type": "application/json" }, waitMs: timeoutMs });
    },
    async waitHealthy(waitMs, sleep = (ms) => new Promise((r) => setTimeout(r, ms))) {
      const until = clock() + waitMs;
      let last = "";
      while (clock() < until) {
        try {
          await request("GET", HEALTH_PATH, undefined, HealthAnswerSchema);
          return;
        } catch (err) {
          last = (err as Error).message;
        }
        await sleep(HEALTH_POLL_MS);
      }
      throw new SidecarLinkError(`the sidecar at ${host} did not become healthy within ${Math.round(waitMs / 1000)} s (${last})`);
    },
    enterStage: (stage) => request("POST", "/v1/stage", { stage }, StageAnswerSchema),
    readStage: () => request("GET", "/v1/stage", undefined, CurrentStageAnswerSchema),
    readStatus: () => request("GET", "/v1/status", undefined, StatusAnswerSchema),
    listEntries: () => request("GET", "/v1/context/entries", undefined, EntriesAnswerSchema),
    label: (entries) => request("POST", "/v1/context/entries", { entries }, LabelAnswerSchema),
    evict: (entries) => request("POST", "/v1/context/evictions", { entries }, EvictAnswerSchema),
    reportWarnings: (warnings) => request("POST", "/v1/warnings", { warnings }, WarningsAnswerSchema),
    async seed(region, seed, entry) {
      const { status, parsed } = await json("POST", "/v1/seeds", { region, seed, entry }, SEED_WAIT_MS);
      if (status === 200) {
        const filled = SeedFilledSchema.safeParse(parsed);
        if (!filled.success) throw new SidecarLinkError(`POST /v1/seeds: an answer that does not fit (${filled.error.issues[0]?.message ?? "invalid"})`);
        return { ok: true, ...filled.data };
      }
      const refusal = RefusalAnswerSchema.safeParse(parsed);
      // A refusal is an answer; a 5xx or a body that is not one is the sidecar failing, and the spawn stops on it.
      if (status >= 500 || !refusal.success) throw new SidecarLinkError(`POST /v1/seeds: HTTP ${status}${refusal.success ? `: ${refusal.data.message}` : ""}`);
      return { ok: false, status, ...refusal.data };
    },
    askBinding: (waitMs) => askBinding(send, waitMs),
  };
}

/** `POST /v1/binding` once: a 401 (a token the sidecar no longer holds) and a 503 `not-bound` are waits, not refusals. */
async function askBinding(send: Send, waitMs: number): Promise<BindingAsk> {
  let reply: { status: number; text: string };
  try {
    reply = await send("POST", BINDING_ROUTE, { waitMs });
  } catch (err) {
    if (err instanceof CapExceededError) return { kind: "refused", message: `the sidecar's answer to the binding ask is too large (${err.message})` };
    return { kind: "wait", unreachable: true };
  }
  let body: unknown;
  try {
    body = JSON.parse(reply.text);
  } catch {
    body = undefined;
  }
  if (reply.status === 200) return { kind: "answer", body };
  const refusal = RefusalAnswerSchema.partial().safeParse(body);
  const { code, message } = refusal.success ? refusal.data : {};
  if (reply.status === 401 || (reply.status === 503 && parseRefusalCode(code) === "not-bound")) return { kind: "wait", unreachable: false };
  return { kind: "refused", message: `the sidecar refused the binding (${reply.status} ${code ?? ""}): ${message ?? "no message"}` };
}

/** One request about a call: what it is, and how much longer than the client's timeout its answer may take (a wait). */
interface Exchange {
  readonly id: string;
  readonly tool: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
  readonly extraMs: number;
}

/** A client for one sidecar. */
export function createSidecarClient(opts: SidecarClientOptions): SidecarClient {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const host = new URL(base).host;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const clock = opts.clock ?? Date.now;
  let token = opts.token;
  const refresh = opts.refreshToken;
  const send = createSend(base, opts.maxResponseBytes ?? MAX_BODY_BYTES, {
    current: () => token,
    whenRefused: opts.whenRefused,
    refresh: refresh && ((refused) => {
      const fresh = refresh(refused);
      if (fresh !== undefined) token = fresh;
      return fresh;
    }),
  });
  const exchange = async (x: Exchange): Promise<ClientAnswer> => {
    const { id, tool, method, path, headers, body, extraMs } = x;
    let reply: { status: number; text: string };
    try {
      reply = await send(method, path, { headers, waitMs: timeoutMs + extraMs, ...(body === undefined ? {} : { body }) });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      const why = e.name === "TimeoutError" ? `no answer within ${timeoutMs + extraMs} ms` : e.cause?.code ?? e.message;
      return failClosed(id, tool, "sidecar-unavailable", why);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(reply.text);
    } catch {
      return failClosed(id, tool, "sidecar-invalid-response", "a body that is not JSON");
    }
    return interpretAnswer(id, tool, reply.status, parsed);
  };
  return {
    baseUrl: base,
    setToken: (t) => {
      token = t;
    },
    callTool: (call) =>
      // The deadline: a call the sidecar only gets to after this client gave up (and said it did not run) must not run.
      exchange({
        id: call.id, tool: call.tool, method: "POST", path: "/v1/tool-calls", headers: { ...opts.traceHeaders, "content-type": "application/json", [DEADLINE_HEADER]: String(clock() + timeoutMs) },
        body: JSON.stringify(call), extraMs: 0,
      }),
    // The deadline again: a call still waiting on its prompt when this client stops waiting is withdrawn, never run.
    waitForCall: (id, tool, seconds) =>
      exchange({
        id, tool, method: "GET", path: `/v1/tool-calls/${encodeURIComponent(id)}?wait=${seconds}`, headers: { [DEADLINE_HEADER]: String(clock() + timeoutMs + seconds * 1000) },
        body: undefined, extraMs: seconds * 1000,
      }),
    ...createLinkCalls(send, host, timeoutMs, clock),
  };
}
