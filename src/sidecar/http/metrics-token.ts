// Who may read the sidecar's /metrics: only a bearer token whose SHA-256 is the digest the sidecar was started
// with. In a cluster that is the scrape token the controller keeps in a Secret of its own namespace; the engine
// pod carries only its digest (docs/security.md, "Metrics"), so nothing in the Run's namespace, the agent
// container included, holds a token that reads them.
import { createHash, timingSafeEqual } from "node:crypto";

/** A SHA-256 digest as `--metrics-token-sha256` takes it: 64 lower-case hex digits. */
export const METRICS_TOKEN_DIGEST = /^[0-9a-f]{64}$/;

/** The hex SHA-256 of a scrape token, as the sidecar is given it. */
export function digestMetricsToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/**
 * The check of a scrape's `Authorization` header: `Bearer <token>` whose digest is `digestHex`, compared in
 * constant time. Anything else (no header, another scheme, the digest itself, a wrong token) is refused.
 */
export function createMetricsTokenCheck(digestHex: string): (authorization: string | undefined) => boolean {
  if (!METRICS_TOKEN_DIGEST.test(digestHex)) throw new Error("metrics token digest is not 64 lower-case hex digits");
  const expected = Buffer.from(digestHex, "hex");
  return (authorization) => {
    const match = /^Bearer (\S+)$/.exec(authorization ?? "");
    if (match === null) return false;
    return timingSafeEqual(createHash("sha256").update(match[1]!).digest(), expected);
  };
}
