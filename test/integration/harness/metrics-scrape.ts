// Scrapes a secure /metrics as Prometheus does: HTTPS verified against a CA for a server name, with a service
// account's bearer token from the TokenRequest API.
import { request } from "node:https";
import { testCluster } from "./test-cluster.ts";

/** How to reach and trust the endpoint, and the bearer token to present (none: no `Authorization`). */
export interface SecureScrape {
  /** `host:port`. */
  address: string;
  /** Absent: the certificate is not verified (an endpoint whose certificate is made in memory at start). */
  ca?: Buffer | string;
  servername?: string;
  bearer?: string | undefined;
  path?: string;
}

/** GET over HTTPS; resolves with the status and body, rejects on a TLS or connection error. */
export function scrapeHttps(s: SecureScrape): Promise<{ status: number; body: string }> {
  const cut = s.address.lastIndexOf(":");
  return new Promise((resolve, reject) => {
    const req = request({
      host: s.address.slice(0, cut), port: Number(s.address.slice(cut + 1)), path: s.path ?? "/metrics",
      ...(s.ca === undefined ? { rejectUnauthorized: false } : { ca: s.ca, servername: s.servername }),
      headers: s.bearer ? { authorization: `Bearer ${s.bearer}` } : {}, timeout: 30_000,
    }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("scrape timed out"))).on("error", reject).end();
  });
}

/** A fresh token of ServiceAccount `namespace/name` (10 minutes), as a projected token would be. */
export async function serviceAccountToken(namespace: string, name: string): Promise<string> {
  const res = await testCluster().core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { audiences: [], expirationSeconds: 600 } } });
  const value = res.status?.token ?? "";
  if (value === "") throw new Error(`no token for ${namespace}/${name}`);
  return value;
}
