// A runtime's client for the sidecar that fails closed: a refused connection, a timeout, a reset, a body over
// the cap, malformed JSON or an answer that does not fit the request all become a deny. Only a 200 whose body
// is a well-formed allow or run for the same call id ever lets a tool run.
import { readBoundedText } from "../../io/bounded-text.ts";
import { buildBodyCapMessage, MAX_BODY_BYTES } from "../../policy/size-caps.ts";
import {
  AllowAnswerSchema, AskAnswerSchema, buildRefusalMessage, DEADLINE_HEADER, DenyAnswerSchema, RunAnswerSchema, type EntryRef,
} from "../../api/sidecar-contract.ts";

/** Options of {@link createSidecarClient}. */
export interface SidecarClientOptions {
  /** `http://127.0.0.1:8181`. */
  readonly baseUrl: string;
  /** Per request, headers and body included (default 10 s). A wait adds its own duration. */
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** The runtime's per-start secret (the runtime token file's contents). */
  readonly token?: string | undefined;
  /** Milliseconds since the epoch (the call's deadline is sent with it). */
  readonly clock?: () => number;
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
  callTool(call: ClientCall): Promise<ClientAnswer>;
  /** Waits up to `seconds` for a pending call's answer. */
  waitForCall(id: string, tool: string, seconds: number): Promise<ClientAnswer>;
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

/** A client for one sidecar. */
export function createSidecarClient(opts: SidecarClientOptions): SidecarClient {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const host = new URL(base).host;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const cap = opts.maxResponseBytes ?? MAX_BODY_BYTES;
  const clock = opts.clock ?? Date.now;
  const auth: Record<string, string> = opts.token === undefined ? {} : { authorization: `Bearer ${opts.token}` };
  const exchange = async (id: string, tool: string, path: string, init: RequestInit, extraMs: number): Promise<ClientAnswer> => {
    let status: number;
    let text: string;
    try {
      const res = await fetch(`${base}${path}`, { ...init, headers: { ...auth, ...(init.headers as Record<string, string>) }, signal: AbortSignal.timeout(timeoutMs + extraMs) });
      status = res.status;
      text = await readBoundedText(res.body, cap, () => new Error(buildBodyCapMessage(host, cap)));
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      const why = e.name === "TimeoutError" ? `no answer within ${timeoutMs + extraMs} ms` : e.cause?.code ?? e.message;
      return failClosed(id, tool, "sidecar-unavailable", why);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return failClosed(id, tool, "sidecar-invalid-response", "a body that is not JSON");
    }
    return interpretAnswer(id, tool, status, body);
  };
  return {
    callTool: (call) =>
      // The deadline: a call the sidecar only gets to after this client gave up (and said it did not run) must not run.
      exchange(call.id, call.tool, "/v1/tool-calls", { method: "POST", headers: { "content-type": "application/json", [DEADLINE_HEADER]: String(clock() + timeoutMs) }, body: JSON.stringify(call) }, 0),
    // The deadline again: a call still waiting on its prompt when this client stops waiting is withdrawn, never run.
    waitForCall: (id, tool, seconds) =>
      exchange(id, tool, `/v1/tool-calls/${encodeURIComponent(id)}?wait=${seconds}`, { method: "GET", headers: { [DEADLINE_HEADER]: String(clock() + timeoutMs + seconds * 1000) } }, seconds * 1000),
  };
}
