// Serves the validating webhook over TLS and keeps its certificate current: either managed by the controller (the
// CA and serving certificate in a Secret, renewed before expiry, the caBundle patched) or read from a directory
// that cert-manager (or anyone) keeps up to date. A new certificate replaces the TLS context without a restart.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { KubeClient } from "../../kube/client.ts";
import type { Logger } from "../../log/logger.ts";
import { buildWebhookApp } from "./webhook-app.ts";
import { CERT_KEYS, ensureWebhookCertificates, type WebhookCertificateOptions } from "./webhook-certificates.ts";

/** Where the certificate comes from. */
export type WebhookCertificateSource =
  | ({ kind: "managed" } & WebhookCertificateOptions)
  /** A directory holding `tls.crt` and `tls.key` (a mounted cert-manager Secret), re-read every check. */
  | { kind: "files"; dir: string };

/** How to serve the webhook. */
export interface WebhookServerOptions {
  host: string;
  port: number;
  certificates: WebhookCertificateSource;
  /** How often the certificate is checked for renewal (default one minute). */
  checkIntervalMs?: number;
}

/** A running webhook server. */
export interface WebhookServer {
  /** The bound `host:port`. */
  readonly address: string;
  /** The PEM certificate being served now. */
  servingCertificate(): string;
  stop(): Promise<void>;
}

type Pair = { certPem: string; keyPem: string };

async function loadPair(source: WebhookCertificateSource, client: KubeClient, nowMs: number, log: Logger): Promise<Pair> {
  if (source.kind === "files") {
    const [certPem, keyPem] = await Promise.all([readFile(join(source.dir, CERT_KEYS.cert), "utf8"), readFile(join(source.dir, CERT_KEYS.key), "utf8")]);
    return { certPem, keyPem };
  }
  const { material, caBundlePatched } = await ensureWebhookCertificates(client, source, nowMs);
  if (caBundlePatched === undefined && source.configurationName) log.warn({ configuration: source.configurationName }, "no ValidatingWebhookConfiguration of that name; its caBundle is not kept");
  if (caBundlePatched) log.info({ configuration: source.configurationName }, "patched the webhook's caBundle");
  return material;
}

/** Start the webhook server; the first certificate must be obtained, or the start fails (nobody admits then). */
export async function startWebhookServer(opts: WebhookServerOptions, deps: { client: KubeClient; log: Logger; nowMs: () => number }): Promise<WebhookServer> {
  let pair = await loadPair(opts.certificates, deps.client, deps.nowMs(), deps.log);
  const app = buildWebhookApp((v) => {
    if (!v.allowed) deps.log.info({ kind: v.kind, operation: v.operation, name: v.name, reason: v.message }, "admission refused");
  }, { https: { cert: pair.certPem, key: pair.keyPem, minVersion: "TLSv1.2" } });
  await app.listen({ host: opts.host, port: opts.port });
  const bound = app.server.address();
  let running: Promise<void> | undefined;
  const check = async () => {
    try {
      const next = await loadPair(opts.certificates, deps.client, deps.nowMs(), deps.log);
      if (next.certPem === pair.certPem && next.keyPem === pair.keyPem) return;
      (app.server as unknown as { setSecureContext(o: { cert: string; key: string }): void }).setSecureContext({ cert: next.certPem, key: next.keyPem });
      pair = next;
      deps.log.info("serving a renewed webhook certificate");
    } catch (err) {
      // Keep serving the current certificate; it was renewed with a third of its life left.
      deps.log.warn({ err }, "webhook certificate check failed");
    }
  };
  const timer = setInterval(() => {
    running ??= check().finally(() => (running = undefined));
  }, opts.checkIntervalMs ?? 60_000);
  timer.unref();
  return {
    address: `${opts.host}:${typeof bound === "object" && bound ? bound.port : opts.port}`,
    servingCertificate: () => pair.certPem,
    async stop() {
      clearInterval(timer);
      await running;
      await app.close();
    },
  };
}
