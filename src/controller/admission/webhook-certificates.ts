// The webhook's own certificate authority, kept in a Secret so every replica serves the same material: a
// self-signed CA and a serving certificate it signs, each renewed before it expires. The CA bundle the API server
// trusts (the ValidatingWebhookConfiguration's caBundle) holds the current CA and, after a CA renewal, the previous
// one until it expires, and is patched before a certificate from a new CA is served.
import { X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import type { KubeClient } from "../../kube/client.ts";
import { isApiStatus } from "../../kube/errors.ts";
import { issueCertificate, type IssuedCertificate } from "./x509.ts";

/** The Secret's keys (`tls.crt`/`tls.key` as a `kubernetes.io/tls` Secret has them). */
export const CERT_KEYS = { caBundle: "ca.crt", caKey: "ca.key", cert: "tls.crt", key: "tls.key" } as const;

/** How the controller manages the webhook's certificates. */
export interface WebhookCertificateOptions {
  secret: { namespace: string; name: string };
  /** The ValidatingWebhookConfiguration whose caBundle the controller keeps; undefined keeps none. */
  configurationName?: string | undefined;
  /** DNS names and IPs the serving certificate is for (the Service's names; 127.0.0.1 in tests). */
  hosts: readonly string[];
  caValidityMs: number;
  certValidityMs: number;
}

/** A year for the CA, ninety days for the serving certificate (renewed with a third of their life left). */
export const DEFAULT_VALIDITY = { caValidityMs: 365 * 86_400_000, certValidityMs: 90 * 86_400_000 } as const;

/** What a server needs: its certificate and key, and the bundle clients must trust. */
export interface ServingMaterial {
  certPem: string;
  keyPem: string;
  caBundlePem: string;
}

type Renewal = "keep" | "cert" | "ca";

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n?/g;

function splitPem(bundle: string): string[] {
  return (bundle.match(PEM_CERT) ?? []).map((p) => (p.endsWith("\n") ? p : `${p}\n`));
}

const lifeLeft = (cert: X509Certificate, nowMs: number) => {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return { left: to - nowMs, third: (to - from) / 3 };
};

const covers = (cert: X509Certificate, host: string) => (isIP(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host) !== undefined);

/** Which part of the material must be renewed now (a missing or unreadable part counts as expired). Pure but for parsing. */
export function decideRenewal(material: Partial<ServingMaterial & { caKeyPem: string }>, hosts: readonly string[], nowMs: number): Renewal {
  try {
    const ca = new X509Certificate(splitPem(material.caBundlePem ?? "")[0] ?? "");
    const caLife = lifeLeft(ca, nowMs);
    if (!material.caKeyPem || caLife.left <= caLife.third) return "ca";
    const cert = new X509Certificate(material.certPem ?? "");
    const life = lifeLeft(cert, nowMs);
    if (!material.keyPem || !cert.verify(ca.publicKey) || life.left <= life.third || !hosts.every((h) => covers(cert, h))) return "cert";
    // A certificate outliving its CA would stop verifying first; renew it with the CA instead.
    return Date.parse(cert.validTo) > Date.parse(ca.validTo) ? "cert" : "keep";
  } catch {
    return "ca";
  }
}

type SecretObject = { metadata: { name: string; namespace: string; resourceVersion?: string }; type?: string; data?: Record<string, string> };

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, "base64").toString("utf8") : undefined);

function renew(kind: Renewal, current: Partial<ServingMaterial & { caKeyPem: string }>, opts: WebhookCertificateOptions, nowMs: number): ServingMaterial & { caKeyPem: string } {
  // Backdated for clock skew between replicas and the API server (a tenth of the lifetime at most).
  const notBeforeMs = nowMs - Math.min(5 * 60_000, opts.certValidityMs / 10);
  let ca: IssuedCertificate = { certPem: splitPem(current.caBundlePem ?? "")[0] ?? "", keyPem: current.caKeyPem ?? "" };
  let bundle = splitPem(current.caBundlePem ?? "");
  if (kind === "ca") {
    ca = issueCertificate({ commonName: `leviath-webhook-ca-${nowMs}`, notBeforeMs, notAfterMs: nowMs + opts.caValidityMs });
    // Keep the CAs that still verify certificates some replica may be serving.
    const still = bundle.filter((p) => { try { return Date.parse(new X509Certificate(p).validTo) > nowMs; } catch { return false; } });
    bundle = [ca.certPem, ...still.slice(0, 1)];
  }
  const caEnd = Date.parse(new X509Certificate(ca.certPem).validTo);
  const leaf = issueCertificate({ commonName: opts.hosts[0] ?? "leviath-webhook", notBeforeMs, notAfterMs: Math.min(nowMs + opts.certValidityMs, caEnd), hosts: opts.hosts, issuer: ca });
  return { certPem: leaf.certPem, keyPem: leaf.keyPem, caBundlePem: bundle.join(""), caKeyPem: ca.keyPem };
}

/** Read, renew if due, and write back the Secret; a write conflict (another replica renewed) re-reads it. */
async function ensureSecret(client: KubeClient, opts: WebhookCertificateOptions, nowMs: number): Promise<ServingMaterial> {
  const { namespace, name } = opts.secret;
  const path = `/api/v1/namespaces/${namespace}/secrets/${name}`;
  for (let attempt = 0; attempt < 5; attempt++) {
    const existing = await client.request<SecretObject>("GET", path).catch((err: unknown) => {
      if (isApiStatus(err, 404)) return undefined;
      throw err;
    });
    const d = existing?.data ?? {};
    const current = { caBundlePem: unb64(d[CERT_KEYS.caBundle]), caKeyPem: unb64(d[CERT_KEYS.caKey]), certPem: unb64(d[CERT_KEYS.cert]), keyPem: unb64(d[CERT_KEYS.key]) };
    const due = decideRenewal(current, opts.hosts, nowMs);
    if (due === "keep") return current as ServingMaterial;
    const next = renew(due, current, opts, nowMs);
    const data = { [CERT_KEYS.caBundle]: b64(next.caBundlePem), [CERT_KEYS.caKey]: b64(next.caKeyPem), [CERT_KEYS.cert]: b64(next.certPem), [CERT_KEYS.key]: b64(next.keyPem) };
    try {
      if (existing) await client.request("PUT", path, { body: { ...existing, data } });
      else await client.request("POST", `/api/v1/namespaces/${namespace}/secrets`, { body: { apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, type: "Opaque", data } });
      return next;
    } catch (err) {
      if (!isApiStatus(err, 409)) throw err;
    }
  }
  throw new Error(`secret ${namespace}/${name}: gave up after repeated write conflicts`);
}

type WebhookConfiguration = { metadata: { resourceVersion?: string }; webhooks?: { name: string; clientConfig?: { caBundle?: string } }[] };

/** Set the caBundle of every webhook in the configuration; returns whether it changed. Undefined: no such object. */
export async function patchCaBundle(client: KubeClient, configurationName: string, caBundlePem: string): Promise<boolean | undefined> {
  const path = `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${configurationName}`;
  const vwc = await client.request<WebhookConfiguration>("GET", path).catch((err: unknown) => {
    if (isApiStatus(err, 404)) return undefined;
    throw err;
  });
  if (!vwc) return undefined;
  const want = b64(caBundlePem);
  const webhooks = vwc.webhooks ?? [];
  if (webhooks.every((w) => w.clientConfig?.caBundle === want)) return false;
  // A PUT with the resourceVersion read: a concurrent edit (helm upgrade) fails with 409 and is retried next tick.
  await client.request("PUT", path, { body: { ...vwc, webhooks: webhooks.map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle: want } })) } });
  return true;
}

/** Make sure the Secret holds current material and the webhook configuration trusts its CA; returns what to serve. */
export async function ensureWebhookCertificates(client: KubeClient, opts: WebhookCertificateOptions, nowMs: number): Promise<{ material: ServingMaterial; caBundlePatched: boolean | undefined }> {
  const material = await ensureSecret(client, opts, nowMs);
  const caBundlePatched = opts.configurationName ? await patchCaBundle(client, opts.configurationName, material.caBundlePem) : undefined;
  return { material, caBundlePatched };
}
