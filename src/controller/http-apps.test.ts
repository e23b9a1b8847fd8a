import { request as httpsRequest } from "node:https";
import type { AddressInfo, Server } from "node:net";
import { Counter, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { issueCertificate } from "./admission/x509.ts";
import { buildMetricsApp, buildProbeApp } from "./http-apps.ts";
import type { MetricsAccess } from "./metrics-auth.ts";

// The metrics and probe servers over real loopback HTTP and HTTPS.
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listening(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  return (server.address() as AddressInfo).port;
}

/** One HTTPS request that trusts `ca`; status, content type and body. */
function getTls(port: number, path: string, ca: string, authorization?: string): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: "127.0.0.1", port, path, ca, servername: "localhost", headers: authorization ? { authorization } : {} }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"], body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the probe server", () => {
  it("answers /healthz always, /readyz once the caches synced, 404 to anything else", async () => {
    let ready = false;
    const port = await listening(buildProbeApp({ ready: () => ready }));
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notYet = await fetch(`${base}/readyz`);
    expect([notYet.status, await notYet.text()]).toEqual([503, "caches not synced"]);
    ready = true;
    const now = await fetch(`${base}/readyz?verbose`);
    expect([now.status, await now.text(), now.headers.get("content-type")]).toEqual([200, "ok", "text/plain; charset=utf-8"]);
    const head = await fetch(`${base}/healthz`, { method: "HEAD" });
    expect([head.status, await head.text()]).toEqual([200, ""]);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`, { method: "POST" })).status).toBe(404);
  });
});

describe("the metrics server", () => {
  it("serves the registry in Prometheus' text format over plain HTTP", async () => {
    const r = new Registry();
    new Counter({ name: "leviath_test_total", help: "a test counter", registers: [r] }).inc(3);
    const port = await listening(buildMetricsApp(r));
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(r.contentType);
    expect(await res.text()).toContain("leviath_test_total 3");
  });

  it("over HTTPS, asks the authorizer about every request first and never serves a refused one", async () => {
    const nowMs = Date.now();
    const issued = issueCertificate({ commonName: "leviath-metrics", notBeforeMs: nowMs - 60_000, notAfterMs: nowMs + 86_400_000, hosts: ["localhost"] });
    const answers: Record<string, MetricsAccess> = { "Bearer good": 200, "Bearer unknown": 401, "Bearer other": 403, "Bearer broken": 500 };
    const asked: [string | undefined, string][] = [];
    const r = new Registry();
    const port = await listening(buildMetricsApp(r, {
      tls: { cert: Buffer.from(issued.certPem), key: Buffer.from(issued.keyPem) },
      authorize: (authorization, path) => {
        asked.push([authorization, path]);
        if (authorization === "Bearer throws") return Promise.reject(new Error("review failed"));
        return Promise.resolve(answers[authorization ?? ""] ?? 401);
      },
    }));
    expect(await getTls(port, "/metrics", issued.certPem, "Bearer good")).toMatchObject({ status: 200, type: r.contentType });
    expect(await getTls(port, "/metrics", issued.certPem)).toEqual({ status: 401, type: "text/plain; charset=utf-8", body: "Unauthorized" });
    expect((await getTls(port, "/metrics?x=1", issued.certPem, "Bearer other")).status).toBe(403);
    expect(await getTls(port, "/metrics", issued.certPem, "Bearer broken")).toMatchObject({ status: 500, body: "authorization check failed" });
    // A failing check is an error answer, never the metrics.
    expect((await getTls(port, "/metrics", issued.certPem, "Bearer throws")).status).toBe(500);
    // The check comes before routing: an unknown path with a refused token is refused, not a 404.
    expect((await getTls(port, "/nothing", issued.certPem, "Bearer unknown")).status).toBe(401);
    expect((await getTls(port, "/nothing", issued.certPem, "Bearer good")).status).toBe(404);
    expect(asked).toContainEqual(["Bearer other", "/metrics"]);
  });
});
