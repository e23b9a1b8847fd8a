// Who may talk to the API at all, checked before any route: only a `Host` the server was started with (a page
// that rebinds its name to 127.0.0.1 sends its own name), never a browser (`Origin`, `Sec-Fetch-Site`), and,
// on every route but the health check and the answer to a prompt, the runtime's per-start secret.
import { timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { buildRefusalBody } from "../../api/sidecar-contract.ts";
import { refuse } from "./refusal-reply.ts";

/** Routes open without the runtime secret: the health probe, and the person's answer (it carries the approval token). */
const OPEN_ROUTES = new Set(["GET /v1/healthz", "POST /v1/approvals/:id"]);
/** Listing prompts takes either secret: the runtime's, or the person's who answers them. */
export const LIST_APPROVALS_ROUTE = "GET /v1/approvals";

/** What the guard checks against. */
export interface RequestGuard {
  /** `host:port` values accepted in `Host`, filled in once the server listens (empty: everything refused). */
  readonly hosts: Set<string>;
  /** The runtime's secret. */
  readonly runtimeToken: string;
  /** The person's secret (standalone), also accepted for listing prompts. */
  readonly approvalToken?: string | undefined;
}

/** The `Host` values a server listening on `host:port` accepts: that host, its bound address and `localhost`. */
export function computeAllowedHosts(listenHost: string, bound: { address: string; port: number }): Set<string> {
  const form = (h: string) => (isIP(h) === 6 ? `[${h}]` : h);
  return new Set([listenHost, bound.address, "localhost"].map((h) => `${form(h)}:${bound.port}`));
}

/** Whether an `Authorization` header carries this bearer secret (compared in constant time). */
export function hasBearer(req: { readonly headers: { readonly authorization?: string | undefined } }, token: string | undefined): boolean {
  if (token === undefined) return false;
  const given = Buffer.from(req.headers.authorization ?? "");
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The headers {@link checkCaller} reads. */
interface CallerHeaders {
  readonly host?: string | undefined;
  readonly origin?: string | undefined;
  readonly "sec-fetch-site"?: string | string[] | undefined;
}

/**
 * Why a caller is refused whatever it asks: a `Host` not in `hosts`, or a browser. The bound sidecar's guard and the
 * unbound pool pod's server (unbound-server.ts) both check this first.
 */
export function checkCaller(headers: CallerHeaders, hosts: ReadonlySet<string>): ReturnType<typeof buildRefusalBody> | undefined {
  if (!hosts.has(headers.host ?? "")) return buildRefusalBody("host-not-allowed", headers.host ?? "");
  if (headers.origin !== undefined || headers["sec-fetch-site"] !== undefined) return buildRefusalBody("browser-request");
  return undefined;
}

/** Why a request is refused before any route, or undefined when it may go on. */
function checkRequest(req: FastifyRequest, guard: RequestGuard): ReturnType<typeof buildRefusalBody> | undefined {
  const caller = checkCaller(req.headers, guard.hosts);
  if (caller !== undefined) return caller;
  const route = `${req.method} ${req.routeOptions.url ?? ""}`;
  if (OPEN_ROUTES.has(route)) return undefined;
  if (hasBearer(req, guard.runtimeToken) || (route === LIST_APPROVALS_ROUTE && hasBearer(req, guard.approvalToken))) return undefined;
  return buildRefusalBody("runtime-token-required");
}

/** Installs the guard on every request of the app. */
export function installRequestGuard(app: FastifyInstance, guard: RequestGuard): void {
  // A callback hook, not an async one: no promise and no microtasks on every request. A refusal answers and
  // never calls `done`, so no route runs after it.
  app.addHook("onRequest", (req, reply, done) => {
    const refusal = checkRequest(req, guard);
    if (refusal === undefined) {
      done();
      return;
    }
    void refuse(reply, refusal);
  });
}
