// `leviath sidecar` flags, checked: addresses (the API only on loopback), mode, intervals, paths.
import { isIP } from "node:net";
import { RUN_MODES, type RunMode } from "../api/run-policy.ts";
import { isSafeRunName } from "../sidecar/storage/audit-writer.ts";
import { UsageError } from "./io.ts";

// The V8 flags the container sets through the environment are read with the flags, before anything else runs.
export { applySidecarV8Flags } from "./sidecar-v8-flags.ts";

/** The flags `leviath sidecar` accepts. */
export const SIDECAR_OPTIONS = {
  agent: { type: "string" },
  config: { type: "string" },
  policy: { type: "string" },
  rules: { type: "string" },
  "run-policy": { type: "string" },
  "blueprint-dir": { type: "string" },
  workdir: { type: "string" },
  listen: { type: "string" },
  "metrics-listen": { type: "string" },
  "metrics-token-sha256": { type: "string" },
  mode: { type: "string" },
  allow: { type: "string", multiple: true },
  run: { type: "string" },
  namespace: { type: "string", short: "n" },
  "audit-dir": { type: "string" },
  "reload-interval-ms": { type: "string" },
  "approval-token-file": { type: "string" },
  "runtime-token-file": { type: "string" },
  shell: { type: "string" },
  kubeconfig: { type: "string" },
  "log-level": { type: "string" },
  "stop-grace-ms": { type: "string" },
  "exec-wait-seconds": { type: "string" },
  "mcp-secrets-dir": { type: "string" },
  pool: { type: "boolean" },
  "sandbox-pods-of": { type: "string" },
  "sandbox-pod": { type: "string", multiple: true },
  "otlp-traces-endpoint": { type: "string" },
  "trace-content": { type: "string" },
} as const;

/** The flags only a pool pod's sidecar takes (the Run's sidecar that takes over is started without them). */
export function refusePoolOnlyFlags(v: { readonly "sandbox-pod"?: readonly string[] | undefined }): void {
  if (v["sandbox-pod"] !== undefined) throw new UsageError("--sandbox-pod goes with --pool (a pool pod's own sandbox pods)");
}

/** How long a pods/exec waits for its container by default (a Run's default `sandboxReadySeconds`). */
export const DEFAULT_EXEC_WAIT_SECONDS = 300;

/** The default API address. */
export const DEFAULT_LISTEN = "127.0.0.1:8181";

/** The API serves the runtime beside it: loopback only, never a routable address. */
export function isLoopbackHost(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/** A run mode flag. */
export function parseMode(text: string | undefined): RunMode | undefined {
  if (text === undefined) return undefined;
  if (!(RUN_MODES as readonly string[]).includes(text)) throw new UsageError(`--mode '${text}' is not one of ${RUN_MODES.join(", ")}`);
  return text as RunMode;
}

/** A positive integer flag with a default. */
export function parsePositiveInt(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} '${text}' is not a positive integer`);
  return n;
}

/** The run's name: one path component (it names the audit directory). */
export function parseRunName(text: string): string {
  if (!isSafeRunName(text)) throw new UsageError(`--run '${text}' must be letters, digits, '.', '_' or '-'`);
  return text;
}
