import { readFileSync } from "node:fs";

/** What this build is: the package version, and the Node that runs it. */
export interface BuildInfo {
  readonly version: string;
  readonly nodeVersion: string;
}

let cached: BuildInfo | undefined;

/** The build's identity, from package.json (beside src/ in a checkout, beside dist/ in the image). */
export function getBuildInfo(): BuildInfo {
  if (cached) return cached;
  let version = "unknown";
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
    if (typeof pkg.version === "string") version = pkg.version;
  } catch {
    // A missing package.json leaves "unknown": build info must never stop the process.
  }
  cached = { version, nodeVersion: process.version };
  return cached;
}
