import { parseArgs, type ParseArgsConfig } from "node:util";
import { isLogLevel, LOG_LEVELS, type LogLevel } from "../log/logger.ts";
import type { ListenAddress } from "../sidecar/build-sidecar.ts";
import { UsageError } from "./io.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Parse a subcommand's argv strictly; unknown flags and missing values become usage errors that name them. */
export function parseCommandArgs<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
  } catch (err) {
    const msg = (err as Error).message.replace(/\. To specify a positional argument.*$/s, "");
    throw new UsageError(msg);
  }
}

/**
 * `host:port` or `[v6]:port`; the port may be 0 (any free port). With `anyHost`, an empty host (`:8080`, the
 * controller-runtime spelling) means that host; without it, a host is required.
 */
export function parseListenAddress(flag: string, text: string, anyHost?: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  const host = m?.[1] ?? (m?.[2] === "" ? anyHost : m?.[2]);
  const port = Number(m?.[3]);
  if (host === undefined || host === "" || !Number.isInteger(port) || port > 65_535) throw new UsageError(`${flag} '${text}' is not host:port`);
  return { host, port };
}

/** A log level flag (default info). */
export function parseLogLevel(text: string | undefined): LogLevel {
  if (text === undefined) return "info";
  if (!isLogLevel(text)) throw new UsageError(`--log-level '${text}' is not one of ${LOG_LEVELS.join(", ")}`);
  return text;
}
