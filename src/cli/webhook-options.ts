// The `leviath controller` flags of the validating webhook, parsed into the operator's options.
import type { WebhookServerOptions } from "../controller/admission/webhook-server.ts";
import { DEFAULT_VALIDITY } from "../controller/admission/webhook-certificates.ts";
import { parseListenAddress } from "./args.ts";
import { UsageError } from "./io.ts";

/** The webhook's flags, for the controller's option table. */
export const WEBHOOK_OPTIONS = {
  "webhook-bind-address": { type: "string" },
  "webhook-cert-dir": { type: "string" },
  "webhook-secret": { type: "string" },
  "webhook-configuration": { type: "string" },
  "webhook-hosts": { type: "string" },
} as const;

/** The webhook's lines of `leviath controller --help`. */
export const WEBHOOK_HELP = `  --webhook-bind-address ADDR          serve the validating webhook (POST /validate, TLS) on host:port (":port" on every
                                       interface; default 0: none). Refuses what only the operator can check: read-path
                                       entries, CEL rules, unknown keys
  --webhook-cert-dir DIR               serve DIR/tls.crt and DIR/tls.key (cert-manager's Secret), re-read every minute
  --webhook-secret NAMESPACE/NAME      without --webhook-cert-dir: keep the webhook's own CA and certificate in this
                                       Secret (created if missing), renewed with a third of their life left (CA a year,
                                       certificate 90 days)
  --webhook-configuration NAME         the ValidatingWebhookConfiguration whose caBundle the controller keeps
  --webhook-hosts NAME[,NAME...]       DNS names and IPs of the serving certificate (the webhook Service's names)
`;

type Values = { [K in keyof typeof WEBHOOK_OPTIONS]?: string | undefined };

/** The webhook's options, or undefined when no bind address was given; a half-configured webhook is a usage error. */
export function parseWebhookOptions(v: Values): WebhookServerOptions | undefined {
  const addr = v["webhook-bind-address"];
  const others = (["webhook-cert-dir", "webhook-secret", "webhook-configuration", "webhook-hosts"] as const).filter((k) => v[k] !== undefined);
  if (addr === undefined || addr === "0") {
    if (others.length > 0) throw new UsageError(`--${others[0]} needs --webhook-bind-address`);
    return undefined;
  }
  const { host, port } = parseListenAddress("--webhook-bind-address", addr, "0.0.0.0");
  const dir = v["webhook-cert-dir"];
  if (dir !== undefined) {
    if (v["webhook-secret"] !== undefined) throw new UsageError("--webhook-cert-dir and --webhook-secret exclude each other (certificates from files, or managed in a Secret)");
    return { host, port, certificates: { kind: "files", dir } };
  }
  const secret = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(v["webhook-secret"] ?? "");
  if (!secret) throw new UsageError(`--webhook-secret '${v["webhook-secret"] ?? ""}' is not NAMESPACE/NAME (needed unless --webhook-cert-dir is given)`);
  const hosts = (v["webhook-hosts"] ?? "").split(",").map((h) => h.trim()).filter(Boolean);
  if (hosts.length === 0) throw new UsageError("--webhook-hosts: the serving certificate needs at least one DNS name or IP");
  return {
    host, port,
    certificates: { kind: "managed", secret: { namespace: secret[1]!, name: secret[3]! }, configurationName: v["webhook-configuration"], hosts, ...DEFAULT_VALIDITY },
  };
}
