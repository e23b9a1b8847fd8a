import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";

/** Client TLS material for probing the API server and the controller manager. */
export type TlsClient = { ca: Buffer; cert: Buffer; key: Buffer };

/**
 * Returns `count` distinct free TCP ports on 127.0.0.1. All listeners stay open until every port is
 * picked, so the kernel never hands out the same port twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () =>
      new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        const server = createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve(server));
      }),
    ),
  );
  const ports = servers.map((s) => {
    const address = s.address();
    if (address === null || typeof address === "string") throw new Error("a TCP listener has no port");
    return address.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

/** A GET on loopback: the status and body, or the error as text (a probe never throws). */
export async function probe(url: string, tls?: TlsClient, timeoutMs = 3_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const request = target.protocol === "https:" ? httpsRequest : httpRequest;
    const req = request(target, { method: "GET", timeout: timeoutMs, ...(tls ?? {}) }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", (error) => resolve({ status: 0, body: error.message }));
    });
    req.on("timeout", () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.on("error", (error) => resolve({ status: 0, body: error.message }));
    req.end();
  });
}
