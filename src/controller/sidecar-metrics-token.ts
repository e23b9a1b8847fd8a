// The scrape token of every Run's sidecar /metrics: one random bearer token the controller keeps in a Secret of
// its own namespace, which the scraper (the chart's PodMonitor) reads and presents. Engine pods get only its
// SHA-256, so neither the Run's namespace nor the agent container holds anything that reads a sidecar's metrics.
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { FIELD_MANAGER, LABEL } from "../api/constants.ts";
import type { KubeClient } from "../kube/client.ts";
import { isApiStatus } from "../kube/errors.ts";
import { digestMetricsToken } from "../sidecar/http/metrics-token.ts";

/** The key of the token in the Secret (the PodMonitor's `authorization.credentials.key`). */
export const SIDECAR_METRICS_TOKEN_KEY = "token";

const SecretSchema = z.object({ data: z.record(z.string(), z.string()).optional() });

function tokenOf(secret: unknown, where: string): string {
  const parsed = SecretSchema.safeParse(secret);
  const value = parsed.success ? parsed.data.data?.[SIDECAR_METRICS_TOKEN_KEY] : undefined;
  const token = value === undefined ? "" : Buffer.from(value, "base64").toString("utf8").trim();
  // A short or empty token would be guessable: refuse to hand engine pods a digest of it.
  if (token.length < 32 || /\s/.test(token)) throw new Error(`secret ${where}: key '${SIDECAR_METRICS_TOKEN_KEY}' must hold a token of at least 32 characters without spaces`);
  return token;
}

/**
 * The digest of the scrape token in Secret `namespace/name`, creating the Secret with a new 256-bit token when it
 * does not exist (another replica creating it first is read back). Errors (no permission, a malformed Secret)
 * propagate: the controller then does not start, rather than serve sidecar metrics without a token.
 */
export async function ensureSidecarMetricsToken(client: KubeClient, namespace: string, name: string): Promise<string> {
  const path = `/api/v1/namespaces/${namespace}/secrets/${name}`;
  const where = `${namespace}/${name}`;
  const existing = await client.request("GET", path).catch((err: unknown) => {
    if (isApiStatus(err, 404)) return undefined;
    throw err;
  });
  if (existing !== undefined) return digestMetricsToken(tokenOf(existing, where));
  const token = randomBytes(32).toString("hex");
  const body = {
    apiVersion: "v1", kind: "Secret", type: "Opaque",
    metadata: { name, namespace, labels: { [LABEL.managedBy]: FIELD_MANAGER } },
    data: { [SIDECAR_METRICS_TOKEN_KEY]: Buffer.from(token).toString("base64") },
  };
  try {
    await client.request("POST", `/api/v1/namespaces/${namespace}/secrets`, { body });
    return digestMetricsToken(token);
  } catch (err) {
    if (!isApiStatus(err, 409)) throw err;
    return digestMetricsToken(tokenOf(await client.request("GET", path), where));
  }
}
