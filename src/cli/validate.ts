import type { CliIo } from "./io.ts";
export const VALIDATE_HELP = "";
export function runValidate(_argv: string[], _io: CliIo): number { return 2; }
