// Delegated authentication and authorization, as kubebuilder's secure metrics do it: a bearer token is
// checked with a TokenReview, and the user it names with a SubjectAccessReview on a non-resource path.
import { z } from "zod";
import type { KubeClient } from "./client.ts";

/** The user a token belongs to, as the API server reports it. */
export interface ReviewedUser {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

const TokenReviewStatusSchema = z.object({
  status: z.object({
    authenticated: z.boolean().optional(),
    user: z.object({
      username: z.string(),
      uid: z.string().optional(),
      groups: z.array(z.string()).optional(),
      extra: z.record(z.string(), z.array(z.string())).optional(),
    }).optional(),
  }).optional(),
});

const AccessReviewStatusSchema = z.object({ status: z.object({ allowed: z.boolean().optional() }).optional() });

/** The user behind a bearer token, or null when the API server does not authenticate it. */
export async function reviewToken(client: KubeClient, token: string): Promise<ReviewedUser | null> {
  const body = { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } };
  const res = TokenReviewStatusSchema.safeParse(await client.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", { body, timeoutMs: 10_000 }));
  const user = res.success ? res.data.status?.user : undefined;
  if (!res.success || res.data.status?.authenticated !== true || user === undefined) return null;
  return { username: user.username, groups: user.groups ?? [], ...(user.uid ? { uid: user.uid } : {}), ...(user.extra ? { extra: user.extra } : {}) };
}

/** Whether `user` may `verb` the non-resource URL `path` (RBAC's `nonResourceURLs`). */
export async function reviewNonResourceAccess(client: KubeClient, user: ReviewedUser, path: string, verb: string): Promise<boolean> {
  const body = {
    apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview",
    spec: { user: user.username, groups: user.groups, ...(user.uid ? { uid: user.uid } : {}), ...(user.extra ? { extra: user.extra } : {}), nonResourceAttributes: { path, verb } },
  };
  const res = AccessReviewStatusSchema.safeParse(await client.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", { body, timeoutMs: 10_000 }));
  return res.success && res.data.status?.allowed === true;
}
