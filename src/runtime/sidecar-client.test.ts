import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createSidecarClient, interpretAnswer } from "./sidecar-client.ts";

// Every way a sidecar can fail to answer properly must read as a deny, never an allow.
const call = { id: "c1", tool: "shell", args: { command: "echo hi" } };
const servers: (Server | TcpServer)[] = [];
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function listen(server: Server | TcpServer): Promise<string> {
  servers.push(server);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)));
}

function httpAnswering(status: number, body: string): Promise<string> {
  return listen(createHttpServer((_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(body)));
}

describe("createSidecarClient fails closed", () => {
  it("sends its deadline with the call and with each wait (the time it stops waiting)", async () => {
    const seen: (string | undefined)[] = [];
    const url = await listen(createHttpServer((req, res) => {
      seen.push(req.headers["leviath-deadline"] as string | undefined);
      res.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ ...call, decision: "ask", approval: { id: "gate-c1" } }));
    }));
    const client = createSidecarClient({ baseUrl: url, timeoutMs: 1000, clock: () => 5000 });
    expect(await client.callTool(call)).toMatchObject({ decision: "ask" });
    expect(await client.waitForCall("c1", "shell", 30)).toMatchObject({ decision: "ask" });
    expect(seen).toEqual(["6000", "36000"]);
  });

  it("denies when nothing listens", async () => {
    const url = await listen(createTcpServer());
    await new Promise((r) => servers.pop()!.close(r));
    const a = await createSidecarClient({ baseUrl: url }).callTool(call);
    expect(a).toMatchObject({ decision: "deny", code: "sidecar-unavailable", failedClosed: true });
    expect(a.decision === "deny" && a.message).toBe("[denied] Tool 'shell' was not run: the sidecar did not answer (ECONNREFUSED).");
  });

  it("denies when the sidecar accepts the connection and never answers", async () => {
    const url = await listen(createTcpServer((s) => sockets.push(s)));
    const started = Date.now();
    const a = await createSidecarClient({ baseUrl: url, timeoutMs: 300 }).callTool(call);
    expect(a).toMatchObject({ decision: "deny", code: "sidecar-unavailable", message: "[denied] Tool 'shell' was not run: the sidecar did not answer (no answer within 300 ms)." });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("denies when the connection is cut in the middle of an allow", async () => {
    const url = await listen(createTcpServer((s) => {
      sockets.push(s);
      s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{"id":"c1","tool":"shell","decision":"allow"');
      setTimeout(() => s.destroy(), 20);
    }));
    expect(await createSidecarClient({ baseUrl: url }).callTool(call)).toMatchObject({ decision: "deny", code: "sidecar-unavailable", failedClosed: true });
  });

  it("denies a 200 that is not a well-formed allow for this very call", async () => {
    const partial = await httpAnswering(200, JSON.stringify({ id: "c1", tool: "shell", decision: "allow" }));
    expect(await createSidecarClient({ baseUrl: partial }).callTool(call)).toMatchObject({ decision: "deny", code: "sidecar-invalid-response" });
    const other = await httpAnswering(200, JSON.stringify({ id: "c2", tool: "shell", decision: "run" }));
    expect(await createSidecarClient({ baseUrl: other }).callTool(call)).toMatchObject({ decision: "deny", code: "sidecar-invalid-response" });
    const notJson = await httpAnswering(200, "allow");
    expect(await createSidecarClient({ baseUrl: notJson }).callTool(call)).toMatchObject({ decision: "deny", message: expect.stringContaining("not JSON") });
  });

  it("stops reading a body over the cap, with the seed's message", async () => {
    const big = JSON.stringify({ id: "c1", tool: "shell", decision: "allow", result: "x".repeat(4096), isError: false, label: "public", taint: "public" });
    const url = await httpAnswering(200, big);
    const a = await createSidecarClient({ baseUrl: url, maxResponseBytes: 1024 }).callTool(call);
    expect(a).toMatchObject({ decision: "deny", code: "sidecar-unavailable" });
    expect(a.decision === "deny" && a.message).toContain(`response body exceeded 1024 bytes from ${new URL(url).host}`);
  });

  it("passes a refusal through, and a 5xx refusal is marked as failed closed", async () => {
    const refusal = { id: "c1", tool: "shell", decision: "deny", code: "permission-denied", message: "[denied] Tool 'shell' is not permitted." };
    expect(interpretAnswer("c1", "shell", 403, refusal)).toEqual({ ...refusal, failedClosed: false });
    expect(interpretAnswer("c1", "shell", 503, { ...refusal, code: "audit-failed" })).toMatchObject({ decision: "deny", failedClosed: true });
    expect(interpretAnswer("c1", "shell", 500, {})).toMatchObject({ decision: "deny", code: "sidecar-invalid-response" });
  });

  it("lets a proper allow, run and ask through", () => {
    expect(interpretAnswer("c1", "shell", 200, { id: "c1", tool: "shell", decision: "allow", result: "hi\n", isError: false, label: "public", taint: "public" })).toMatchObject({ decision: "allow", result: "hi\n" });
    expect(interpretAnswer("c1", "shell", 200, { id: "c1", tool: "shell", decision: "run" })).toMatchObject({ decision: "run" });
    expect(interpretAnswer("c1", "shell", 202, { id: "c1", tool: "shell", decision: "ask", approval: { id: "gate-c1" } })).toEqual({ decision: "ask", id: "c1", tool: "shell", approvalId: "gate-c1" });
    expect(interpretAnswer("c1", "shell", 202, { id: "c1", tool: "shell", decision: "allow" })).toMatchObject({ decision: "deny" });
  });
});

describe("createSidecarClient's other calls", () => {
  it("sends the token set once it was read, reports a result, and reads a seed's refusal as an answer", async () => {
    const seen: string[] = [];
    const url = await listen(createHttpServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "-"}`);
      if (req.url === "/v1/healthz") return res.writeHead(200).end(JSON.stringify({ status: "ok" }));
      if (req.url === "/v1/seeds") return res.writeHead(403).end(JSON.stringify({ decision: "deny", code: "seed-outside-workdir", message: "outside" }));
      res.writeHead(200).end("{}");
    }));
    const client = createSidecarClient({ baseUrl: `${url}/` });
    await client.waitHealthy(1000);
    client.setToken("t0k");
    await client.reportResult("c/1");
    expect(await client.seed("notes", { files: ["/etc/x"] }, { region: "notes", id: "s" })).toEqual({ ok: false, status: 403, code: "seed-outside-workdir", message: "outside" });
    expect(seen).toEqual(["GET /v1/healthz -", "POST /v1/tool-calls/c%2F1/result Bearer t0k", "POST /v1/seeds Bearer t0k"]);
    expect(client.baseUrl).toBe(url);
  });

  it("throws a SidecarLinkError on a refusal, an answer that is not JSON, or nothing listening", async () => {
    const refusing = await httpAnswering(404, JSON.stringify({ code: "unknown-stage", message: "no stage 'x' in the run policy" }));
    await expect(createSidecarClient({ baseUrl: refusing }).enterStage("x")).rejects.toThrow(/^POST \/v1\/stage: HTTP 404: .*unknown-stage/);
    const notJson = await httpAnswering(200, "ok");
    await expect(createSidecarClient({ baseUrl: notJson }).evict([])).rejects.toThrow("POST /v1/context/evictions: HTTP 200, not JSON");
    const closed = await listen(createTcpServer());
    await new Promise((r) => servers.pop()!.close(r));
    await expect(createSidecarClient({ baseUrl: closed }).label([])).rejects.toMatchObject({ name: "SidecarLinkError", message: expect.stringContaining("did not answer (ECONNREFUSED)") });
  });
});

describe("createSidecarClient's reads for the adapter", () => {
  it("reads the stage, the status's result and the context entries, each parsed by its schema", async () => {
    const answers: Record<string, unknown> = {
      "/v1/stage": { stage: "review", index: 1, transitions: [] },
      "/v1/status": { run: "r", result: { inline: "done", bytes: 4 } },
      "/v1/context/entries": { entries: [{ region: "task", id: "task", level: "public" }] },
    };
    const url = await listen(createHttpServer((req, res) => res.writeHead(200).end(JSON.stringify(answers[req.url ?? ""] ?? {}))));
    const client = createSidecarClient({ baseUrl: url });
    expect(await client.readStage()).toEqual({ stage: "review", index: 1 });
    expect(await client.readStatus()).toEqual({ result: { inline: "done", bytes: 4 } });
    expect(await client.listEntries()).toEqual({ entries: [{ region: "task", id: "task", level: "public" }] });
  });

  it("throws on an answer that does not fit its schema, never reading it as something else", async () => {
    const url = await httpAnswering(200, JSON.stringify({ stage: 3 }));
    await expect(createSidecarClient({ baseUrl: url }).readStage()).rejects.toMatchObject({ name: "SidecarLinkError", message: expect.stringContaining("GET /v1/stage: an answer that does not fit") });
    await expect(createSidecarClient({ baseUrl: url }).listEntries()).rejects.toMatchObject({ name: "SidecarLinkError" });
  });
});

describe("createSidecarClient's binding ask", () => {
  it("hands back a 200's body, with the token it was given", async () => {
    const seen: string[] = [];
    const url = await listen(createHttpServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "-"}`);
      res.writeHead(200).end(JSON.stringify({ run: "r1" }));
    }));
    const client = createSidecarClient({ baseUrl: url });
    client.setToken("t0k");
    expect(await client.askBinding(1000)).toEqual({ kind: "answer", body: { run: "r1" } });
    expect(seen).toEqual(["POST /v1/binding Bearer t0k"]);
  });

  it("waits on a refused token, on not-bound and on no answer; any other refusal ends the wait with its code and message", async () => {
    const ask = async (status: number, body: string) => createSidecarClient({ baseUrl: await httpAnswering(status, body) }).askBinding(1000);
    expect(await ask(401, JSON.stringify({ decision: "deny", code: "runtime-token-required", message: "m" }))).toEqual({ kind: "wait", unreachable: false });
    expect(await ask(503, JSON.stringify({ decision: "deny", code: "not-bound", message: "m" }))).toEqual({ kind: "wait", unreachable: false });
    expect(await ask(409, JSON.stringify({ decision: "deny", code: "binding-given", message: "given once" }))).toEqual({ kind: "refused", message: "the sidecar refused the binding (409 binding-given): given once" });
    expect(await ask(503, "not json")).toEqual({ kind: "refused", message: "the sidecar refused the binding (503 ): no message" });
    const closed = await listen(createTcpServer());
    await new Promise((r) => servers.pop()!.close(r));
    expect(await createSidecarClient({ baseUrl: closed }).askBinding(1000)).toEqual({ kind: "wait", unreachable: true });
  });
});

describe("createSidecarClient after a sidecar restart", () => {
  // Issue 41: each sidecar start writes a new runtime token; a client that kept the first was refused for good.
  async function acceptingOnly(token: string, seen: (string | undefined)[]): Promise<string> {
    return listen(createHttpServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ decision: "deny", code: "runtime-token-required", message: "this API needs the runtime token" }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ...call, decision: "allow", result: "hi", isError: false, label: "public", taint: "none" }));
    }));
  }

  it("sends a refused request once more with the token read again, and keeps that token", async () => {
    const seen: (string | undefined)[] = [];
    const url = await acceptingOnly("new", seen);
    const refused: (string | undefined)[] = [];
    const client = createSidecarClient({
      baseUrl: url, token: "old",
      refreshToken: (t) => {
        refused.push(t);
        return "new";
      },
    });
    expect(await client.callTool(call)).toMatchObject({ decision: "allow", result: "hi" });
    expect(await client.callTool({ ...call, id: "c1" })).toMatchObject({ decision: "allow" });
    expect(seen).toEqual(["Bearer old", "Bearer new", "Bearer new"]);
    expect(refused).toEqual(["old"]);
  });

  it("waits out a sidecar starting again (its connection refused), then sends the request once more", async () => {
    const probe = await listen(createTcpServer());
    await new Promise((r) => servers.pop()!.close(r));
    const port = Number(new URL(probe).port);
    const seen: (string | undefined)[] = [];
    let waited = 0;
    const client = createSidecarClient({
      baseUrl: probe, token: "new",
      whenRefused: async () => {
        waited++;
        const server = createHttpServer((req, res) => {
          seen.push(req.headers.authorization);
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ...call, decision: "allow", result: "hi", isError: false, label: "public", taint: "none" }));
        });
        servers.push(server);
        await new Promise<void>((r) => server.listen(port, "127.0.0.1", () => r()));
      },
    });
    expect(await client.callTool(call)).toMatchObject({ decision: "allow", result: "hi" });
    expect(waited).toBe(1);
    expect(seen).toEqual(["Bearer new"]);
  });

  it("does not send it again when there is no other token, and the refusal is the answer", async () => {
    const seen: (string | undefined)[] = [];
    const url = await acceptingOnly("new", seen);
    expect(await createSidecarClient({ baseUrl: url, token: "old", refreshToken: () => undefined }).callTool(call)).toMatchObject({ decision: "deny", code: "runtime-token-required" });
    expect(await createSidecarClient({ baseUrl: url, token: "old" }).callTool(call)).toMatchObject({ decision: "deny", code: "runtime-token-required" });
    expect(seen).toEqual(["Bearer old", "Bearer old"]);
  });
});
