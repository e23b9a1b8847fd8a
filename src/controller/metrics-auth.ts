// Who may read /metrics: a bearer token the API server authenticates (TokenReview) for a user RBAC allows to
// `get` the path (SubjectAccessReview), as kubebuilder's WithAuthenticationAndAuthorization. Answers are cached
// briefly by token hash, so a scrape every few seconds costs no API calls and a flood of bad tokens few.
import { createHash } from "node:crypto";
import type { ReviewedUser } from "../kube/access-review.ts";

/** HTTP status for a request: 200 to serve, 401 no or unknown token, 403 a user RBAC refuses, 500 the review failed. */
export type MetricsAccess = 200 | 401 | 403 | 500;

/** The two reviews, against the API server. */
export interface MetricsReviewPorts {
  reviewToken(token: string): Promise<ReviewedUser | null>;
  reviewAccess(user: ReviewedUser, path: string, verb: string): Promise<boolean>;
  nowMs(): number;
}

const ALLOWED_TTL_MS = 60_000;
const REFUSED_TTL_MS = 10_000;
const MAX_CACHED = 512;

/** Build the check the metrics server runs on every request; it fails closed (an error is never a 200). */
export function createMetricsAuthorizer(ports: MetricsReviewPorts): (authorization: string | undefined, path: string) => Promise<MetricsAccess> {
  const cache = new Map<string, { access: MetricsAccess; until: number }>();
  return async (authorization, path) => {
    const match = /^Bearer (\S+)$/.exec(authorization ?? "");
    if (!match) return 401;
    const key = createHash("sha256").update(`${path}\n${match[1]}`).digest("hex");
    const hit = cache.get(key);
    if (hit && hit.until > ports.nowMs()) return hit.access;
    let access: MetricsAccess;
    try {
      const user = await ports.reviewToken(match[1]!);
      access = user === null ? 401 : (await ports.reviewAccess(user, path, "get")) ? 200 : 403;
    } catch {
      return 500;
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(key, { access, until: ports.nowMs() + (access === 200 ? ALLOWED_TTL_MS : REFUSED_TTL_MS) });
    return access;
  };
}
