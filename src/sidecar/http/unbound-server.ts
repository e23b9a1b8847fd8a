// The API of an unbound pool pod's sidecar (docs/controller.md, "Late binding, in the pod"): a bare HTTP server on
// loopback that refuses every call `503 not-bound`. The runtime's one useful question, `POST /v1/binding` with the
// runtime token, is held instead (a long poll): it is answered `503 not-bound` when the sidecar is bound and
// closes this server to hand its port to the Run's sidecar, or at the hold's bound, so `leviath bound-exec` asks
// again at once and reaches the bound sidecar as soon as it listens, without asking every few milliseconds while
// nothing binds. An ask without the token is refused `runtime-token-required` at once, as the bound sidecar does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { BINDING_HOLD_MS, BINDING_ROUTE } from "../../api/binding.ts";
import { buildRefusalBody, lookupRefusalStatus, type RefusalCode } from "../../api/sidecar-contract.ts";
import { hasBearer } from "./request-guard.ts";

/** Most asks held at once: the runtime holds one; any beyond are answered at once. */
const MAX_HELD = 8;
/** How long the close waits for the held asks' answers to be written before it drops every connection. */
const RELEASE_FLUSH_MS = 200;

/** The listening unbound server, and its close: held asks answered not-bound, then every connection dropped. */
export interface UnboundServer {
  readonly server: Server;
  close(): Promise<void>;
}

/** Every call is refused not-bound; the binding's ask, without the runtime token, is refused as the bound sidecar refuses it. */
function refusalOf(req: IncomingMessage, token: string): RefusalCode {
  return isBindingAsk(req) && !hasBearer(req, token) ? "runtime-token-required" : "not-bound";
}

function isBindingAsk(req: IncomingMessage): boolean {
  return req.method === "POST" && (req.url ?? "").split("?")[0] === BINDING_ROUTE;
}

function refuse(res: ServerResponse, code: RefusalCode, close = false): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(lookupRefusalStatus(code), { "content-type": "application/json", ...(close ? { connection: "close" } : {}) }).end(JSON.stringify(buildRefusalBody(code)));
}

/** Listens on `host:port`, refusing every call and holding the runtime's binding asks for up to `holdMs`. */
export function listenUnbound(host: string, port: number, token: string, holdMs = BINDING_HOLD_MS): Promise<UnboundServer> {
  const held = new Map<ServerResponse, NodeJS.Timeout>();
  const release = (res: ServerResponse, close: boolean) => {
    clearTimeout(held.get(res));
    held.delete(res);
    refuse(res, "not-bound", close);
  };
  let closing = false;
  const server = createServer((req, res) => {
    req.resume();
    const code = refusalOf(req, token);
    if (code !== "not-bound" || !isBindingAsk(req) || closing || held.size >= MAX_HELD) {
      refuse(res, code);
      return;
    }
    held.set(res, setTimeout(() => release(res, false), holdMs));
    // A runtime that gives up its ask frees its place.
    res.once("close", () => {
      clearTimeout(held.get(res));
      held.delete(res);
    });
  });
  const close = async () => {
    closing = true;
    const closed = new Promise((resolve) => server.close(resolve));
    const written = [...held.keys()].map((res) => new Promise((resolve) => res.once("close", resolve).once("finish", resolve)));
    for (const res of [...held.keys()]) release(res, true);
    await Promise.race([Promise.all(written), new Promise((resolve) => setTimeout(resolve, RELEASE_FLUSH_MS).unref())]);
    // Every connection left is dropped at once (a client's keep-alive one would hold the port's hand-over).
    server.closeAllConnections();
    await closed;
  };
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve({ server, close }));
  });
}
