// The API of an unbound pool pod's sidecar (docs/controller.md, "Late binding, in the pod"): a bare HTTP server on
// loopback that refuses every call `503 not-bound`. The runtime's one useful question, `POST /v1/binding` with the
// runtime token, is held instead (a long poll). Once the pod is bound and the Run's sidecar is built (its audit
// open), the held ask is answered with the binding itself (`handOver`, the hand-out the Run's sidecar records),
// before this server closes and hands its port to the Run's sidecar: the runtime has its Run without a second ask.
// Any other held ask is answered `503 not-bound` at the close, or at the hold's bound, so `leviath bound-exec` asks
// again at once and reaches the bound sidecar as soon as it listens, without asking every few milliseconds while
// nothing binds. An ask without the token, from a browser or to a Host this server does not listen on is refused at
// once, as the bound sidecar's request guard refuses it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { BINDING_HOLD_MS, BINDING_ROUTE } from "../../api/binding.ts";
import type { AddressInfo } from "node:net";
import { buildRefusalBody, lookupRefusalStatus, type RefusalCode } from "../../api/sidecar-contract.ts";
import type { BindingReply } from "./binding-route.ts";
import { checkCaller, computeAllowedHosts, hasBearer } from "./request-guard.ts";

/** Most asks held at once: the runtime holds one; any beyond are answered at once. */
const MAX_HELD = 8;
/** How long the close waits for the held asks' answers to be written before it drops every connection. */
const RELEASE_FLUSH_MS = 200;

/** The listening unbound server, the hand-over of its held ask, and its close. */
export interface UnboundServer {
  readonly server: Server;
  /**
   * Answers the ask held longest with `answer()` (called only when an ask is held; that ask no longer times out
   * while it runs) and says whether one was. The connection closes after the answer.
   */
  handOver(answer: () => Promise<BindingReply>): Promise<boolean>;
  /** Held asks answered not-bound, then every connection dropped. Again: the same close. */
  close(): Promise<void>;
}

type Refusal = ReturnType<typeof buildRefusalBody<RefusalCode>>;
const NOT_BOUND: Refusal = buildRefusalBody("not-bound");

/**
 * Every call is refused not-bound; the binding's ask is refused as the bound sidecar's guard refuses it (a Host it
 * does not listen on, a browser, no runtime token) and is otherwise held.
 */
function refusalOf(req: IncomingMessage, token: string, hosts: ReadonlySet<string>): Refusal {
  if (!isBindingAsk(req)) return NOT_BOUND;
  return checkCaller(req.headers, hosts) ?? (hasBearer(req, token) ? NOT_BOUND : buildRefusalBody("runtime-token-required"));
}

function isBindingAsk(req: IncomingMessage): boolean {
  return req.method === "POST" && (req.url ?? "").split("?")[0] === BINDING_ROUTE;
}

function reply(res: ServerResponse, answer: BindingReply, close: boolean): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(answer.status, { "content-type": "application/json", ...(close ? { connection: "close" } : {}) }).end(JSON.stringify(answer.body));
}

function refuse(res: ServerResponse, refusal: Refusal, close = false): void {
  reply(res, { status: lookupRefusalStatus(refusal.code), body: refusal }, close);
}

/** Listens on `host:port`, refusing every call and holding the runtime's binding asks for up to `holdMs`. */
export function listenUnbound(host: string, port: number, token: string, holdMs = BINDING_HOLD_MS): Promise<UnboundServer> {
  const held = new Map<ServerResponse, NodeJS.Timeout>();
  const release = (res: ServerResponse, close: boolean) => {
    clearTimeout(held.get(res));
    held.delete(res);
    refuse(res, NOT_BOUND, close);
  };
  let closing = false;
  // Filled in once it listens (an ephemeral port is known only then); until then every ask is refused.
  const hosts = new Set<string>();
  const server = createServer((req, res) => {
    req.resume();
    const refusal = refusalOf(req, token, hosts);
    if (refusal.code !== "not-bound" || !isBindingAsk(req) || closing || held.size >= MAX_HELD) {
      refuse(res, refusal);
      return;
    }
    held.set(res, setTimeout(() => release(res, false), holdMs));
    // A runtime that gives up its ask frees its place.
    res.once("close", () => {
      clearTimeout(held.get(res));
      held.delete(res);
    });
  });
  const handOver = async (answer: () => Promise<BindingReply>) => {
    const [res] = held.keys();
    if (res === undefined || closing) return false;
    clearTimeout(held.get(res));
    held.delete(res);
    const answered = await answer();
    // Written out before the close drops every connection.
    await new Promise<void>((resolve) => {
      if (res.writableEnded || res.destroyed) return resolve();
      res.once("finish", () => resolve()).once("close", () => resolve());
      reply(res, answered, true);
    });
    return true;
  };
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= closeOnce());
  const closeOnce = async () => {
    closing = true;
    const ended = new Promise((resolve) => server.close(resolve));
    const written = [...held.keys()].map((res) => new Promise((resolve) => res.once("close", resolve).once("finish", resolve)));
    for (const res of [...held.keys()]) release(res, true);
    await Promise.race([Promise.all(written), new Promise((resolve) => setTimeout(resolve, RELEASE_FLUSH_MS).unref())]);
    // Every connection left is dropped at once (a client's keep-alive one would hold the port's hand-over).
    server.closeAllConnections();
    await ended;
  };
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      for (const h of computeAllowedHosts(host, server.address() as AddressInfo)) hosts.add(h);
      resolve({ server, handOver, close });
    });
  });
}
