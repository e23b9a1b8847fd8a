import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_TOOLS } from "../../api/tools.ts";
import { isLocalAddress } from "./address-guard.ts";
import { MAX_REDIRECTS, OUTBOUND_BODY_CAP, runHttpTool, type OutboundSettings } from "./http-tools.ts";

// The HTTP tools' executor against a real node:http server on loopback (local addresses allowed, as a policy with
// allowLocalNetwork would): what comes back for a page, a POST, a redirect on the same host and to another one,
// bodies over the cap, binary content, a server that never answers; and the refusal of local addresses.
let server: Server;
let port: number;
const seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
const held: ServerResponse[] = [];

function route(req: IncomingMessage, body: string, res: ServerResponse): void {
  const path = req.url ?? "/";
  if (path === "/hello") return void res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "x-note": "n".repeat(2000) }).end("hello, world");
  if (path === "/echo") return void res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ method: req.method, type: req.headers["content-type"] ?? null, body }));
  if (path === "/same") return void res.writeHead(302, { location: "/hello" }).end("moved");
  if (path === "/other") return void res.writeHead(302, { location: `http://localhost:${port}/hello` }).end("secret of the first host");
  if (path === "/see-other") return void res.writeHead(303, { location: "/echo" }).end();
  if (path === "/keep-post") return void res.writeHead(307, { location: "/echo" }).end();
  if (path === "/loop") return void res.writeHead(302, { location: "/loop" }).end();
  if (path === "/userinfo") return void res.writeHead(302, { location: `http://user:pw@127.0.0.1:${port}/hello` }).end();
  if (path === "/chunked") {
    res.writeHead(200, { "content-type": "text/plain" });
    for (let i = 0; i < 20; i++) res.write("é".repeat(50_000));
    return void res.end();
  }
  if (path === "/declared") return void res.writeHead(200, { "content-type": "text/plain", "content-length": "2000000" }).end("x".repeat(2_000_000));
  if (path === "/binary") return void res.writeHead(200, { "content-type": "image/png" }).end(Buffer.alloc(4096, 0x89));
  if (path === "/garbage") return void res.writeHead(200).end(Buffer.alloc(4096, 0xff));
  if (path === "/never") return void held.push(res);
  res.writeHead(404, { "content-type": "text/plain" }).end("no such page");
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      route(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const res of held) res.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const LOCAL: OutboundSettings = { allowLocalNetwork: true, timeoutSeconds: 10 };
const at = (path: string) => `http://127.0.0.1:${port}${path}`;

async function call(tool: "web_fetch" | "http_get" | "http_post", args: Record<string, unknown>, outbound: OutboundSettings = LOCAL) {
  // The arguments as the sidecar parses them before any decision (the url normalised).
  const parsed = BUILTIN_TOOLS[tool].args.parse(args) as Record<string, unknown>;
  return runHttpTool({ tool, args: parsed, outbound });
}

const text = (r: Awaited<ReturnType<typeof call>>) => (r.outcome.kind === "done" ? r.outcome.result : `<${r.outcome.kind}>`);

describe("the HTTP tools' executor", () => {
  it("gets a page: the status, the headers in a bounded form, then the body", async () => {
    const r = await call("web_fetch", { url: at("/hello") });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: false }, metric: "ok" });
    const [head, body] = text(r).split("\n\n");
    expect(head!.split("\n")[0]).toBe("HTTP 200 OK");
    expect(head).toContain("content-type: text/plain; charset=utf-8");
    // A long header value is cut.
    expect(head).toContain(`x-note: ${"n".repeat(512)}[...]`);
    expect(body).toBe("hello, world");
    expect(seen.at(-1)).toMatchObject({ method: "GET", url: "/hello" });
    expect(seen.at(-1)!.headers["user-agent"]).toBe("leviath-sidecar");
  });

  it("posts a body, as JSON when it parses as JSON, with the call's headers", async () => {
    const r = await call("http_post", { url: at("/echo"), body: '{"a":1}', headers: { "X-Team": "ops" } });
    expect(r.metric).toBe("ok");
    expect(text(r)).toMatch(/^HTTP 201 Created\n/);
    expect(JSON.parse(text(r).split("\n\n")[1]!)).toEqual({ method: "POST", type: "application/json", body: '{"a":1}' });
    expect(seen.at(-1)!.headers["x-team"]).toBe("ops");
    const plain = await call("http_post", { url: at("/echo"), body: "just words" });
    expect(JSON.parse(text(plain).split("\n\n")[1]!)).toMatchObject({ type: "text/plain; charset=utf-8", body: "just words" });
  });

  it("gives a 4xx back as an error result with its body", async () => {
    const r = await call("http_get", { url: at("/missing") });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: true }, metric: "http_error" });
    expect(text(r)).toMatch(/^HTTP 404 Not Found\ncontent-type: text\/plain\ndate: [^\n]+\nconnection: close\ntransfer-encoding: chunked\n\nno such page$/);
  });

  it("follows a redirect on the same host", async () => {
    const r = await call("web_fetch", { url: at("/same") });
    expect(r.metric).toBe("ok");
    expect(text(r).endsWith("\n\nhello, world")).toBe(true);
    expect(seen.slice(-2).map((s) => s.url)).toEqual(["/same", "/hello"]);
  });

  it("never follows a redirect to another host: the redirect comes back, not the other host's content", async () => {
    const before = seen.length;
    const r = await call("web_fetch", { url: at("/other") });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: true }, metric: "redirect_refused" });
    expect(text(r)).toMatch(/^HTTP 302 Found\n/);
    expect(text(r)).toContain(`location: http://localhost:${port}/hello`);
    expect(text(r)).toContain("[redirect not followed] it leads to 'localhost', not to '127.0.0.1', the host this call was allowed for");
    // Neither the other host's page nor the redirect's own body.
    expect(text(r)).not.toContain("hello, world");
    expect(text(r)).not.toContain("secret of the first host");
    expect(seen.slice(before).map((s) => s.url)).toEqual(["/other"]);
  });

  it("turns a POST into a GET on a 303, keeps it on a 307, refuses a redirect with userinfo and stops a loop", async () => {
    expect(JSON.parse(text(await call("http_post", { url: at("/see-other"), body: "b" })).split("\n\n")[1]!)).toMatchObject({ method: "GET", body: "" });
    expect(JSON.parse(text(await call("http_post", { url: at("/keep-post"), body: "b" })).split("\n\n")[1]!)).toMatchObject({ method: "POST", body: "b" });
    expect(text(await call("http_get", { url: at("/userinfo") }))).toContain("[redirect not followed] its Location is not a URL this tool fetches (a URL with userinfo");
    const before = seen.length;
    const loop = await call("http_get", { url: at("/loop") });
    expect(loop.metric).toBe("redirect_refused");
    expect(text(loop)).toContain(`[redirect not followed] more than ${MAX_REDIRECTS} redirects.`);
    expect(seen.length - before).toBe(MAX_REDIRECTS + 1);
  });

  it("cuts a body without a declared length at the cap, on a character boundary, with upstream's note", async () => {
    const r = await call("http_get", { url: at("/chunked") });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: false }, metric: "truncated" });
    const body = text(r).split("\n\n").slice(1).join("\n\n");
    const note = "\n[...truncated by leviath: response exceeded 900 KB]";
    expect(body.endsWith(note)).toBe(true);
    const kept = body.slice(0, -note.length);
    expect(kept).toBe("é".repeat(kept.length));
    expect(Buffer.byteLength(kept)).toBe(OUTBOUND_BODY_CAP);
  });

  it("refuses a body whose declared length is over the limit, before reading it", async () => {
    const r = await call("http_get", { url: at("/declared") });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: true }, metric: "oversized" });
    expect(text(r).endsWith("\n\nresponse declares 2000000 bytes, over the 900000-byte limit - fetch a more specific page")).toBe(true);
  });

  it("refuses binary content, declared or not", async () => {
    expect(text(await call("web_fetch", { url: at("/binary") }))).toContain("\n\nnon-text content (image/png, 4 KB) - this tool returns text only");
    expect((await call("web_fetch", { url: at("/garbage") })).metric).toBe("not_text");
  });

  it("stops a call past its deadline and gives back nothing it read (fails closed)", async () => {
    const r = await call("web_fetch", { url: at("/never") }, { allowLocalNetwork: true, timeoutSeconds: 1 });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: true }, metric: "timed_out" });
    expect(text(r)).toBe("[error] Tool 'web_fetch' to '127.0.0.1' did not finish within 1 s; it was stopped and nothing it read is given back.");
  });

  it("refuses a local address unless the policy allows it: a literal, or a name that resolves to one", async () => {
    const before = seen.length;
    const off: OutboundSettings = { allowLocalNetwork: false, timeoutSeconds: 10 };
    const literal = await call("http_post", { url: at("/echo"), body: "secret" }, off);
    expect(literal).toEqual({
      metric: "local_refused",
      outcome: { kind: "refused", code: "local-address", message: "[denied] Tool 'http_post': '127.0.0.1' resolves to 127.0.0.1, a local address, and this policy does not allow local network access (allowLocalNetwork); nothing was sent there." },
    });
    const named = await call("web_fetch", { url: `http://localhost:${port}/hello` }, off);
    expect(named).toMatchObject({ metric: "local_refused", outcome: { kind: "refused", code: "local-address" } });
    expect(seen.length).toBe(before);
  });

  it("says why a host cannot be reached", async () => {
    const r = await call("http_get", { url: "http://no-such-host.invalid/" }, { allowLocalNetwork: false, timeoutSeconds: 10 });
    expect(r).toMatchObject({ outcome: { kind: "done", isError: true }, metric: "failed" });
    expect(text(r)).toMatch(/^\[error\] Tool 'http_get' could not reach 'no-such-host\.invalid': E[A-Z_]+$/);
  });
});

describe("local addresses", () => {
  it.each([
    ["127.0.0.1", true], ["10.1.2.3", true], ["172.20.0.1", true], ["192.168.1.1", true], ["169.254.169.254", true],
    ["100.64.0.1", true], ["0.0.0.0", true], ["224.0.0.1", true], ["::1", true], ["[::1]", true], ["fd00::1", true],
    ["fe80::1", true], ["::ffff:127.0.0.1", true], ["::ffff:7f00:1", true], ["::ffff:a00:1", true], ["64:ff9b::10.0.0.1", true],
    ["not-an-ip", true], ["93.184.216.34", false], ["8.8.8.8", false], ["2606:4700::1111", false], ["::ffff:8.8.8.8", false],
  ])("%s is local: %s", (address, local) => {
    expect(isLocalAddress(address)).toBe(local);
  });
});
