import { parseArgs, type ParseArgsConfig } from "node:util";
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
