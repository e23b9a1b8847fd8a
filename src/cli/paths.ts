import type { CliIo } from "./io.ts";
export const PATHS_HELP = "";
export function runPaths(_argv: string[], _io: CliIo): number { return 2; }
