import { afterEach, describe, expect, it, vi } from "vitest";
import { listenUnbound, type UnboundServer } from "./unbound-server.ts";

const TOKEN = "t0k3n";
let unbound: UnboundServer | undefined;
afterEach(async () => {
  await unbound?.close();
  unbound = undefined;
});

async function start(holdMs?: number): Promise<string> {
  unbound = await listenUnbound("127.0.0.1", 0, TOKEN, holdMs);
  const address = unbound.server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}

/** One call, its status, code and how long it took. */
async function call(url: string, path: string, token?: string, headers: Record<string, string> = {}): Promise<{ status: number; code: string; ms: number; body: unknown }> {
  const t0 = Date.now();
  const res = await fetch(`${url}${path}`, { method: "POST", headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers } });
  const body = (await res.json()) as { code: string };
  return { status: res.status, code: body.code, ms: Date.now() - t0, body };
}

describe("an unbound pool sidecar's server", () => {
  it("refuses every call not-bound at once, and the binding's ask without the runtime token runtime-token-required", async () => {
    const url = await start();
    expect(await call(url, "/v1/binding")).toMatchObject({ status: 401, code: "runtime-token-required" });
    expect(await call(url, "/v1/binding", "not-the-token")).toMatchObject({ status: 401, code: "runtime-token-required" });
    const other = await call(url, "/v1/tool-calls", TOKEN);
    expect(other).toMatchObject({ status: 503, code: "not-bound" });
    expect(other.ms).toBeLessThan(1000);
  });

  it("holds the runtime's ask, and answers it not-bound when it closes to hand its port over", async () => {
    const url = await start();
    let answered = false;
    const asked = call(url, "/v1/binding", TOKEN).finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBe(false);
    const closing = unbound!.close();
    unbound = undefined;
    expect(await asked).toMatchObject({ status: 503, code: "not-bound" });
    await closing;
    await expect(fetch(`${url}/v1/binding`, { method: "POST" })).rejects.toThrow();
  });

  it("answers a held ask not-bound at the hold's bound, so nothing binds without asking only that often", async () => {
    const url = await start(150);
    const held = await call(url, "/v1/binding", TOKEN);
    expect(held).toMatchObject({ status: 503, code: "not-bound" });
    expect(held.ms).toBeGreaterThanOrEqual(140);
  });

  it("hands the held ask its binding once the Run's sidecar is built, then closes", async () => {
    const url = await start();
    const asked = call(url, "/v1/binding", TOKEN);
    // Handed over once the ask is held (until then there is none to hand it to).
    await vi.waitFor(async () => expect(await unbound!.handOver(async () => ({ status: 200, body: { run: "r1", runtimeJson: "{}", credentials: [] } }))).toBe(true));
    expect(await asked).toMatchObject({ status: 200, body: { run: "r1" } });
    await unbound!.close();
    await expect(fetch(`${url}/v1/binding`, { method: "POST" })).rejects.toThrow();
  });

  it("hands nothing over when no ask is held (the binding is then the Run's sidecar's to hand out)", async () => {
    await start();
    let asked = false;
    expect(await unbound!.handOver(async () => {
      asked = true;
      return { status: 200, body: {} };
    })).toBe(false);
    expect(asked).toBe(false);
  });

  it("refuses the binding's ask from a browser or to a Host it does not listen on, as the bound sidecar's guard does, and never holds it", async () => {
    const url = await start();
    expect(await call(url, "/v1/binding", TOKEN, { "sec-fetch-site": "cross-site" })).toMatchObject({ status: 403, code: "browser-request" });
    expect(await call(url, "/v1/binding", TOKEN, { origin: "http://evil.example" })).toMatchObject({ status: 403, code: "browser-request" });
    const { request } = await import("node:http");
    const port = new URL(url).port;
    const rebound = await new Promise<{ status: number; code: string }>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method: "POST", path: "/v1/binding", headers: { host: `evil.example:${port}`, authorization: `Bearer ${TOKEN}` } }, (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, code: (JSON.parse(text) as { code: string }).code }));
      });
      req.once("error", reject);
      req.end();
    });
    expect(rebound).toEqual({ status: 403, code: "host-not-allowed" });
    // None of them was held: the hand-over finds no ask.
    expect(await unbound!.handOver(async () => ({ status: 200, body: {} }))).toBe(false);
  });
});
