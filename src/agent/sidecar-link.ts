// The runtime's side of the sidecar's /v1 API beyond tool calls (docs/runtime.md): wait until it is healthy,
// enter a stage, label what the runtime put in the context, report evictions. Bodies are read under the 64 MiB
// cap and parsed with zod; a sidecar that refuses or answers nonsense is an error, never ignored.
import type { z } from "zod";
import {
  EvictAnswerSchema, HealthAnswerSchema, LabelAnswerSchema, RefusalAnswerSchema, SeedFilledSchema, StageAnswerSchema, type EntryRef,
} from "../api/sidecar-contract.ts";
import { readCappedText } from "./providers/capped-read.ts";

/** A /v1 request that failed: the path, the status and what the sidecar said. */
export class SidecarLinkError extends Error {
  override readonly name = "SidecarLinkError";
}

/** A command seed runs up to the policy's shell timeout (default 60 s; the sidecar stops it): wait longer than any sane one. */
const SEED_WAIT_MS = 15 * 60_000;

/** What `POST /v1/seeds` said: the content and its label, or the sidecar's refusal (code and message). */
export type SeedAnswer = { readonly ok: true; readonly content: string; readonly label: string; readonly taint: string } | { readonly ok: false; readonly status: number; readonly code: string; readonly message: string };


/** The /v1 calls the runtime makes besides tool calls. */
export interface SidecarLink {
  readonly baseUrl: string;
  waitHealthy(timeoutMs: number, sleep?: (ms: number) => Promise<void>): Promise<void>;
  enterStage(stage: string): Promise<z.infer<typeof StageAnswerSchema>>;
  label(entries: readonly (EntryRef & { source: "input" | "model" })[]): Promise<z.infer<typeof LabelAnswerSchema>>;
  evict(entries: readonly EntryRef[]): Promise<z.infer<typeof EvictAnswerSchema>>;
  /** Fills a region through the sidecar, labelling `entry` with what its sources deserve. */
  seed(region: string, seed: Record<string, unknown>, entry: EntryRef): Promise<SeedAnswer>;
  /** Sets the token once it can be read (after healthz). */
  setToken(token: string): void;
}

/** A link to the sidecar at `baseUrl`. */
export function createSidecarLink(baseUrl: string, timeoutMs = 10_000): SidecarLink {
  const base = baseUrl.replace(/\/+$/, "");
  const host = new URL(base).host;
  let token: string | undefined;
  const send = async (method: string, path: string, body: unknown, waitMs = timeoutMs): Promise<{ status: number; parsed: unknown; text: string }> => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(waitMs),
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      throw new SidecarLinkError(`${method} ${path}: the sidecar at ${host} did not answer (${e.cause?.code ?? e.message})`);
    }
    const text = await readCappedText(res.body, host);
    try {
      return { status: res.status, parsed: JSON.parse(text) as unknown, text };
    } catch {
      throw new SidecarLinkError(`${method} ${path}: HTTP ${res.status}, not JSON`);
    }
  };
  const request = async <T>(method: string, path: string, body: unknown, schema: z.ZodType<T>): Promise<T> => {
    const { status, parsed, text } = await send(method, path, body);
    if (status !== 200) throw new SidecarLinkError(`${method} ${path}: HTTP ${status}: ${text.slice(0, 500)}`);
    const ok = schema.safeParse(parsed);
    if (!ok.success) throw new SidecarLinkError(`${method} ${path}: an answer that does not fit (${ok.error.issues[0]?.message ?? "invalid"})`);
    return ok.data;
  };
  return {
    baseUrl: base,
    setToken: (t) => { token = t; },
    async waitHealthy(waitMs, sleep = (ms) => new Promise((r) => setTimeout(r, ms))) {
      const until = Date.now() + waitMs;
      let last = "";
      while (Date.now() < until) {
        try {
          await request("GET", "/v1/healthz", undefined, HealthAnswerSchema);
          return;
        } catch (err) {
          last = (err as Error).message;
        }
        await sleep(250);
      }
      throw new SidecarLinkError(`the sidecar at ${host} did not become healthy within ${Math.round(waitMs / 1000)} s (${last})`);
    },
    enterStage: (stage) => request("POST", "/v1/stage", { stage }, StageAnswerSchema),
    label: (entries) => request("POST", "/v1/context/entries", { entries }, LabelAnswerSchema),
    evict: (entries) => request("POST", "/v1/context/evictions", { entries }, EvictAnswerSchema),
    async seed(region, seed, entry) {
      const { status, parsed } = await send("POST", "/v1/seeds", { region, seed, entry }, SEED_WAIT_MS);
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
  };
}
