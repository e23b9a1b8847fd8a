// Global setup of the e2e project when it cannot run here (test/e2e/harness/e2e-availability.ts): says why once,
// before its tests are reported skipped with the same reason.
import type { TestProject } from "vitest/node";
import type {} from "./harness/provided-context.ts";

/** Prints why the e2e suite is skipped in this run. */
export default function setup(project: TestProject): void {
  process.stderr.write(`[e2e] every e2e test is skipped: ${project.config.provide.e2eUnavailable}\n`);
}
