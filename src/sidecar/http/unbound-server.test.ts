import { afterEach, describe, expect, it } from "vitest";
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
async function call(url: string, path: string, token?: string): Promise<{ status: number; code: string; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${url}${path}`, { method: "POST", headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { code: string };
  return { status: res.status, code: body.code, ms: Date.now() - t0 };
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
});
