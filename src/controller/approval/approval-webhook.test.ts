import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ApprovalNotifier, computeBackoffMs, isRetryable, PENDING_NOTICE_TYPE, SIGNATURE_HEADER, signBody, verifySignature, type NoticeRun } from "./approval-webhook.ts";

// The pending prompt's webhook against a local receiver over real HTTP: the body is the documented JSON, the
// signature verifies under the key (and fails under another or on a changed body), a 500 is retried with backoff
// up to the bound, a 4xx is not, and one prompt is one delivery however often its Run is reconciled.
const key = Buffer.from("0123456789abcdef0123456789abcdef");

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

let server: Server | undefined;

/** A receiver answering each request with the next status of `statuses` (the last one repeated). */
async function receiver(statuses: number[]): Promise<{ url: string; got: Received[] }> {
  const got: Received[] = [];
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      got.push({ headers: req.headers, body });
      res.statusCode = statuses[Math.min(got.length - 1, statuses.length - 1)]!;
      res.end();
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

async function closeReceiver(): Promise<void> {
  const s = server;
  server = undefined;
  if (s === undefined) return;
  s.closeAllConnections();
  await new Promise((r) => s.close(r));
}

afterEach(closeReceiver);

const run = (ids: string[]): NoticeRun => ({
  metadata: { name: "fix-bug", namespace: "team-a", uid: "uid-1" },
  status: { pendingApprovals: ids.map((id) => ({ id, kind: "tool_approval", tool: "shell", target: "make deploy", stage: "main", prompt: "Allow shell?", raisedAt: "2026-12-07T03:00:00.000Z" })) },
});

const fast = { baseDelayMs: 5, maxDelayMs: 20, now: () => new Date("2026-12-07T03:00:01.000Z") };

describe("the pending prompt's webhook", () => {
  it("posts the documented JSON, signed with HMAC-SHA256 over the exact body", async () => {
    const r = await receiver([204]);
    const n = new ApprovalNotifier({ url: r.url, key, ...fast });
    n.notePending(run(["p-1"]));
    expect(await n.settled()).toEqual([{ ok: true, attempts: 1 }]);
    expect(r.got).toHaveLength(1);
    const { headers, body } = r.got[0]!;
    expect(headers["content-type"]).toBe("application/json");
    expect(verifySignature(key, body, headers[SIGNATURE_HEADER] as string)).toBe(true);
    expect(verifySignature(Buffer.from("another key, 32 bytes long......"), body, headers[SIGNATURE_HEADER] as string)).toBe(false);
    expect(verifySignature(key, body.replace("make deploy", "make destroy"), headers[SIGNATURE_HEADER] as string)).toBe(false);
    expect(JSON.parse(body)).toEqual({
      type: PENDING_NOTICE_TYPE, delivery: "uid-1/p-1",
      run: { namespace: "team-a", name: "fix-bug", uid: "uid-1" },
      approval: { id: "p-1", kind: "tool_approval", tool: "shell", target: "make deploy", stage: "main", prompt: "Allow shell?", raisedAt: "2026-12-07T03:00:00.000Z" },
      approve: "kubectl leviath approve fix-bug p-1 -n team-a --once",
      sentAt: "2026-12-07T03:00:01.000Z",
    });
  });

  it("retries a 500 until it is taken, each attempt the same signed body", async () => {
    const r = await receiver([500, 500, 200]);
    const n = new ApprovalNotifier({ url: r.url, key, ...fast });
    n.notePending(run(["p-2"]));
    expect(await n.settled()).toEqual([{ ok: true, attempts: 3 }]);
    expect(r.got).toHaveLength(3);
    expect(new Set(r.got.map((g) => g.body)).size).toBe(1);
    expect(r.got.every((g) => verifySignature(key, g.body, g.headers[SIGNATURE_HEADER] as string))).toBe(true);
  });

  it("a receiver that keeps failing gets maxAttempts requests and no more; a 400 gets one", async () => {
    const warned: string[] = [];
    const failing = await receiver([500]);
    const n = new ApprovalNotifier({ url: failing.url, key, ...fast, maxAttempts: 4, warn: (m) => warned.push(m) });
    n.notePending(run(["p-3"]));
    expect(await n.settled()).toEqual([{ ok: false, attempts: 4, why: "HTTP 500" }]);
    // Reconciling the Run again does not start the prompt's delivery over.
    n.notePending(run(["p-3"]));
    expect(await n.settled()).toEqual([]);
    expect(failing.got).toHaveLength(4);
    await closeReceiver();

    const refusing = await receiver([400]);
    const m = new ApprovalNotifier({ url: refusing.url, key, ...fast, warn: (w) => warned.push(w) });
    m.notePending(run(["p-4"]));
    expect(await m.settled()).toEqual([{ ok: false, attempts: 1, why: "HTTP 400" }]);
    expect(refusing.got).toHaveLength(1);
    await Promise.resolve();
    expect(warned).toEqual([
      "approval webhook: the notice of prompt 'p-3' of Run team-a/fix-bug was not delivered after 4 attempt(s): HTTP 500",
      "approval webhook: the notice of prompt 'p-4' of Run team-a/fix-bug was not delivered after 1 attempt(s): HTTP 400",
    ]);
  });

  it("one delivery per prompt across reconciles; a new prompt of the same Run is its own", async () => {
    const r = await receiver([200]);
    const n = new ApprovalNotifier({ url: r.url, key, ...fast });
    n.notePending(run(["a"]));
    n.notePending(run(["a"]));
    n.notePending(run(["a", "b"]));
    await n.settled();
    expect(r.got.map((g) => (JSON.parse(g.body) as { delivery: string }).delivery).sort()).toEqual(["uid-1/a", "uid-1/b"]);
  });

  it("past maxInFlight deliveries a notice is dropped and told, never queued without bound", async () => {
    const r = await receiver([200]);
    const warned: string[] = [];
    const n = new ApprovalNotifier({ url: r.url, key, ...fast, maxInFlight: 1, warn: (m) => warned.push(m) });
    n.notePending(run(["x", "y"]));
    await n.settled();
    expect(r.got).toHaveLength(1);
    expect(warned).toEqual(["approval webhook: 1 deliveries under way, the notice of prompt 'y' of Run team-a/fix-bug is dropped"]);
  });

  it("backs off exponentially within its bound; retries only the receiver's trouble", () => {
    expect([2, 3, 4, 5, 9].map((a) => computeBackoffMs(a, 1000, 60_000))).toEqual([1000, 2000, 4000, 8000, 60_000]);
    expect([500, 503, 429, 400, 401, 404, 302].map(isRetryable)).toEqual([true, true, true, false, false, false, false]);
    expect(signBody(key, "{}")).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
});
