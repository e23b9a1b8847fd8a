import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { DEFAULT_APPROVAL_TTL_MS } from "../controller/approval/approval-decision.ts";
import { join } from "node:path";
import { issueCertificate } from "../controller/admission/x509.ts";
import { ApprovalNotifier } from "../controller/approval/approval-webhook.ts";
import { checkAuthorshipPolicy, reportAuthorshipPolicy } from "../controller/authorship-policy.ts";
import { createMetricsAuthorizer } from "../controller/metrics-auth.ts";
import { ensureSidecarMetricsToken } from "../controller/sidecar-metrics-token.ts";
import type { MetricsSecurity } from "../controller/http-apps.ts";
import { startOperator, type BindAddress } from "../controller/operator.ts";
import { reviewNonResourceAccess, reviewToken } from "../kube/access-review.ts";
import type { KubeClient } from "../kube/client.ts";
import { connectKube } from "../kube/connect.ts";
import { createLogger, LOG_LEVELS } from "../log/logger.ts";
import { DEFAULT_POD_SETTINGS, type PodSettings } from "../sandbox/pod-settings.ts";
import { parseCommandArgs, parseListenAddress, parseLogLevel } from "./args.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { parseTraceFlags } from "./sidecar-tracing.ts";
import { parseWebhookOptions, WEBHOOK_HELP, WEBHOOK_OPTIONS } from "./webhook-options.ts";

/** `leviath controller --help`. */
export const CONTROLLER_HELP = `Usage: leviath controller [options]

Run the operator: reconcile Agents, Runs and the LeviathPolicy into hardened sandbox pods.
Uses --kubeconfig, else KUBECONFIG, else ~/.kube/config, else the in-cluster service account.

Options:
  --kubeconfig FILE                    kubeconfig to use
  --metrics-bind-address ADDR          serve /metrics on host:port (":port" on every interface, "0" disables; default 0.0.0.0:8080)
  --metrics-secure                     serve /metrics over HTTPS to bearer tokens only: each token is checked with a
                                       TokenReview and its user with a SubjectAccessReview (get on the path /metrics),
                                       as kubebuilder's secure metrics
  --metrics-cert-dir DIR               tls.crt and tls.key of the metrics server (a kubernetes.io/tls Secret mounted);
                                       without it a self-signed certificate made at start (scrapers cannot verify it)
  --sidecar-metrics-token-secret NAME  the Secret (in the Lease's namespace, created when absent) holding the bearer
                                       token every Run's sidecar /metrics serves; engine pods get only its SHA-256.
                                       Without it engine pods serve no metrics
  --health-probe-bind-address ADDR     serve /healthz and /readyz on host:port (":port" on every interface, "0" disables; default 0.0.0.0:8081)
  --leader-elect                       hold a coordination.k8s.io Lease before reconciling (for replicas > 1)
  --leader-election-namespace NS       namespace of the Lease (default POD_NAMESPACE, else the in-cluster namespace, else default)
  --leader-election-id NAME            name of the Lease (default leviath-operator)
  --lease-duration SECONDS             how long a lease lasts without renewal (default 15)
  --renew-deadline SECONDS             the leader gives up after failing to renew for this long (default 10)
  --retry-period SECONDS               how often to acquire or renew (default 2)
  --workers N                          concurrent reconciles per controller (default 4)
  --sidecar-image IMAGE                image of the leviath sidecar container (default ${DEFAULT_POD_SETTINGS.sidecarImage})
  --runtime-image IMAGE                runtime image for Agents that name none (default: such Runs wait)
  --otlp-traces-endpoint URL           every Run's sidecar exports a span per tool call to URL over OTLP/HTTP
                                       (its --otlp-traces-endpoint), and its reference runtime its run and model
                                       calls (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), one trace (docs/tracing.md).
                                       Default: none, no tracing. Set for new engine pods; running ones keep theirs
  --trace-content LEVEL                none, public, internal or private: up to which sensitivity a tool call's
                                       arguments and result go on its span (default public; the sidecars' flag)
  --approval-ttl SECONDS               the controller deletes an Approval this long after its sidecar consumed it, or after
                                       its creation when it names no Run, an earlier Run, or is invalid; any other goes
                                       with its Run (default ${DEFAULT_APPROVAL_TTL_MS / 1000})
  --warm-pools                         keep the LeviathPolicy's spec.pools of unbound engine pods, and let a Run that
                                       matches a pool adopt a ready one (bound late; docs/controller.md, Warm pools);
                                       they stay off when the --authorship-policy named is not in force
  --authorship-policy NAME             the ValidatingAdmissionPolicy (and its binding, of the same name) that lets only
                                       this controller's identity set the marks it recognises its objects by (the
                                       chart's <release>-authorship); read once at start, and the log says whether
                                       it is in force (docs/security.md, Authorship). Without it nothing is checked
  --approval-webhook-url URL           POST a signed JSON notice of each prompt a Run waits on to this http(s) URL, besides
                                       the Run's Event (docs/operations.md, "Notifying pending prompts"); retried with
                                       backoff on 5xx and 429, at most 5 attempts. Needs --approval-webhook-secret-file
  --approval-webhook-secret-file FILE  the HMAC-SHA256 key (the file's bytes, at least 32) the notice is signed with, in the
                                       header X-Leviath-Signature-256: sha256=<hex>
  --log-level LEVEL                    ${LOG_LEVELS.join(", ")} (default info)
${WEBHOOK_HELP}`;

const OPTIONS = {
  kubeconfig: { type: "string" },
  "metrics-bind-address": { type: "string" },
  "metrics-secure": { type: "boolean" },
  "metrics-cert-dir": { type: "string" },
  "sidecar-metrics-token-secret": { type: "string" },
  "health-probe-bind-address": { type: "string" },
  "leader-elect": { type: "boolean" },
  "leader-election-namespace": { type: "string" },
  "leader-election-id": { type: "string" },
  "lease-duration": { type: "string" },
  "renew-deadline": { type: "string" },
  "retry-period": { type: "string" },
  workers: { type: "string" },
  "sidecar-image": { type: "string" },
  "runtime-image": { type: "string" },
  "otlp-traces-endpoint": { type: "string" },
  "trace-content": { type: "string" },
  "approval-ttl": { type: "string" },
  "warm-pools": { type: "boolean" },
  "authorship-policy": { type: "string" },
  "approval-webhook-url": { type: "string" },
  "approval-webhook-secret-file": { type: "string" },
  "log-level": { type: "string" },
  ...WEBHOOK_OPTIONS,
} as const;

function seconds(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  const n = Number(value.replace(/s$/, ""));
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${flag}: '${value}' is not a positive number of seconds`);
  return n * 1000;
}

/** The smallest HMAC key the approval webhook accepts, in bytes (SHA-256's block of security). */
const MIN_WEBHOOK_KEY_BYTES = 32;

/** `--approval-webhook-url` and `--approval-webhook-secret-file`: both or neither; an http(s) URL; a key of 32 bytes or more. */
export function readApprovalWebhook(url: string | undefined, secretFile: string | undefined, read: (file: string) => Buffer = readFileSync): { url: string; key: Buffer } | undefined {
  if (url === undefined && secretFile === undefined) return undefined;
  if (url === undefined || secretFile === undefined) throw new UsageError("--approval-webhook-url and --approval-webhook-secret-file go together");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--approval-webhook-url: '${url}' is not a URL`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw new UsageError(`--approval-webhook-url: '${url}' is not an http or https URL`);
  let key: Buffer;
  try {
    key = read(secretFile);
  } catch (err) {
    throw new UsageError(`--approval-webhook-secret-file: cannot read ${secretFile}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (key.length < MIN_WEBHOOK_KEY_BYTES) throw new UsageError(`--approval-webhook-secret-file: the key in ${secretFile} has ${key.length} bytes, fewer than ${MIN_WEBHOOK_KEY_BYTES}`);
  return { url, key };
}

/** HTTPS with TokenReview and SubjectAccessReview against this client's API server. */
function buildMetricsSecurity(client: KubeClient, tls: { cert: Buffer; key: Buffer }): MetricsSecurity {
  return {
    tls,
    authorize: createMetricsAuthorizer({
      reviewToken: (token) => reviewToken(client, token),
      reviewAccess: (user, path, verb) => reviewNonResourceAccess(client, user, path, verb),
      nowMs: () => performance.now(),
    }),
  };
}

/** The metrics server's certificate and key under --metrics-secure, or a usage error naming the flag and the file. */
function metricsTls(secure: boolean | undefined, dir: string | undefined): { cert: Buffer; key: Buffer } | undefined {
  if (!secure) {
    if (dir !== undefined) throw new UsageError("--metrics-cert-dir goes with --metrics-secure");
    return undefined;
  }
  // As controller-runtime without a CertDir: a self-signed certificate, new at every start.
  if (dir === undefined) {
    const nowMs = Date.now();
    const issued = issueCertificate({ commonName: "leviath-metrics", notBeforeMs: nowMs - 60_000, notAfterMs: nowMs + 365 * 86_400_000, hosts: ["localhost", hostname()] });
    return { cert: Buffer.from(issued.certPem), key: Buffer.from(issued.keyPem) };
  }
  const read = (name: string) => {
    try {
      return readFileSync(join(dir, name));
    } catch (err) {
      throw new UsageError(`--metrics-cert-dir: cannot read ${join(dir, name)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  };
  return { cert: read("tls.crt"), key: read("tls.key") };
}

/** The pods' settings from the flags, and the digest of the sidecars' scrape token when there is one. */
function buildPodSettings(v: Parameters<typeof parseTraceFlags>[0] & { "sidecar-image"?: string | undefined; "runtime-image"?: string | undefined }, sidecarMetricsTokenSha256: string | undefined): PodSettings {
  const tracing = parseTraceFlags(v);
  return {
    ...DEFAULT_POD_SETTINGS, ...(v["sidecar-image"] ? { sidecarImage: v["sidecar-image"] } : {}), ...(v["runtime-image"] ? { defaultRuntimeImage: v["runtime-image"] } : {}),
    ...(sidecarMetricsTokenSha256 ? { sidecarMetricsTokenSha256 } : {}), ...(tracing ? { tracing } : {}),
  };
}

/** A bind address flag: `host:port`, `:port` for every interface, or `0` for none. */
function bindAddress(flag: string, value: string | undefined, fallback: string): BindAddress | undefined {
  const v = value ?? fallback;
  return v === "0" ? undefined : parseListenAddress(`--${flag}`, v, "0.0.0.0");
}

/** `--workers`: an integer from 1 to 64 (default 4). */
function readWorkers(flag: string | undefined): number {
  const workers = Number(flag ?? "4");
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) throw new UsageError(`--workers: '${flag}' is not an integer from 1 to 64`);
  return workers;
}

/** The lease's timing from the flags; the renew deadline must be shorter than the lease. */
function readLeaseTiming(v: { "lease-duration"?: string | undefined; "renew-deadline"?: string | undefined; "retry-period"?: string | undefined }) {
  const lease = {
    leaseDurationMs: seconds("lease-duration", v["lease-duration"], 15),
    renewDeadlineMs: seconds("renew-deadline", v["renew-deadline"], 10),
    retryPeriodMs: seconds("retry-period", v["retry-period"], 2),
  };
  if (lease.renewDeadlineMs >= lease.leaseDurationMs) throw new UsageError("--renew-deadline must be shorter than --lease-duration");
  return lease;
}

/** The election of this process: the Lease named by `--leader-election-id`, an identity of the host name and a random suffix. */
function buildLeaderElection(id: string | undefined, at: { namespace: string; env: CliIo["env"]; lease: ReturnType<typeof readLeaseTiming> }) {
  return { namespace: at.namespace, name: id ?? "leviath-operator", identity: `${at.env["HOSTNAME"] ?? hostname()}_${randomBytes(4).toString("hex")}`, ...at.lease };
}

/** Run `leviath controller` until SIGTERM or SIGINT; exit status 1 when the lease is lost. */
export async function runController(argv: string[], io: CliIo): Promise<number> {
  const { values: v, positionals } = parseCommandArgs(argv, OPTIONS);
  if (v.help) {
    io.stdout(CONTROLLER_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const level = parseLogLevel(v["log-level"]);
  const workers = readWorkers(v.workers);
  const lease = readLeaseTiming(v);
  const metricsAddress = bindAddress("metrics-bind-address", v["metrics-bind-address"], "0.0.0.0:8080");
  const probeAddress = bindAddress("health-probe-bind-address", v["health-probe-bind-address"], "0.0.0.0:8081");
  const approvalTtlMs = seconds("approval-ttl", v["approval-ttl"], DEFAULT_APPROVAL_TTL_MS / 1000);
  const webhook = parseWebhookOptions(v);
  const approvalWebhook = readApprovalWebhook(v["approval-webhook-url"], v["approval-webhook-secret-file"]);

  const tls = metricsTls(v["metrics-secure"], v["metrics-cert-dir"]);

  const log = createLogger(level);
  const client = await connectKube(v.kubeconfig ?? io.env["KUBECONFIG"]?.split(":")[0]);
  const metricsSecurity = tls && buildMetricsSecurity(client, tls);
  const namespace = v["leader-election-namespace"] ?? io.env["POD_NAMESPACE"] ?? client.namespace ?? "default";
  let lost = false;
  let wake: () => void = () => {};
  const stopped = new Promise<void>((resolve) => (wake = resolve));
  const tokenSecret = v["sidecar-metrics-token-secret"];
  const sidecarMetricsTokenSha256 = tokenSecret === undefined ? undefined : await ensureSidecarMetricsToken(client, namespace, tokenSecret);
  const authorshipPolicy = v["authorship-policy"];
  const authorship = authorshipPolicy === undefined ? undefined : await checkAuthorshipPolicy(client, authorshipPolicy);
  const warmPools = reportAuthorshipPolicy(log, authorship, v["warm-pools"] === true);
  const operator = await startOperator({
    client,
    log,
    workers,
    settings: buildPodSettings(v, sidecarMetricsTokenSha256),
    // Each of these is off when undefined: the operator checks them by truth.
    metricsAddress,
    metricsSecurity,
    probeAddress,
    webhook,
    approvalTtlMs,
    warmPools,
    ...(approvalWebhook === undefined ? {} : {
      approvalNotifier: new ApprovalNotifier({ ...approvalWebhook, warn: (message) => log.warn({ url: approvalWebhook.url }, message) }),
    }),
    leaderElection: v["leader-elect"] ? buildLeaderElection(v["leader-election-id"], { namespace, env: io.env, lease }) : undefined,
    onLostLeadership: () => {
      lost = true;
      wake();
    },
  });
  log.info({ addresses: operator.addresses, metricsSecure: Boolean(tls), sidecarMetrics: Boolean(sidecarMetricsTokenSha256), leaderElect: Boolean(v["leader-elect"]) }, "controller started");
  const onSignal = (signal: string) => {
    log.info({ signal }, "shutting down");
    wake();
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  await stopped;
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  await operator.stop();
  log.info("stopped");
  return lost ? EXIT.refused : EXIT.ok;
}
