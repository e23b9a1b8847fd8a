// The one pino factory: JSON lines on stderr (stdout is kept for what a command prints), child loggers per
// component and per reconciled object.
import pino, { type DestinationStream, type Logger } from "pino";

/** A structured logger (pino's). */
export type { Logger };

/** Log levels accepted by `--log-level`. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** A log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * A root logger writing synchronously, so nothing logged just before a crash is lost. Levels are written as names
 * (`"level":"info"`, not pino's 30): what operators grep for and what log pipelines map to severities.
 */
export function createLogger(level: LogLevel = "info", destination?: DestinationStream): Logger {
  return pino({
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  }, destination ?? pino.destination({ fd: 2, sync: true }));
}

/** A child logger for one component (`controller`, `sidecar`, `leader-election`, ...). */
export function componentLogger(log: Logger, component: string): Logger {
  return log.child({ component });
}

/** A child logger for one reconcile of one object, with controller-runtime's keys. */
export function objectLogger(log: Logger, controller: string, key: string, reconcileId: string): Logger {
  const slash = key.indexOf("/");
  const where = slash === -1 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
  return log.child({ controller, ...where, reconcileID: reconcileId });
}

/** Whether a string is a log level. */
export function isLogLevel(text: string): text is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(text);
}
