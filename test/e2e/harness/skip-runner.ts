// The e2e project's runner when the suite cannot run here (test/e2e/harness/e2e-availability.ts): every test file
// is still collected, then each test is reported skipped with the reason (the reporters print it; each test's
// meta keeps it as `e2eUnavailable`, which .ci/run's totals line names), and no hook runs, so no node is started.
import { TestRunner, type RunnerTask, type RunnerTaskResult, type RunnerTestSuite } from "vitest";

/** The meta key (kept in the JSON report) that says why an e2e test did not run. */
export const E2E_UNAVAILABLE_META = "e2eUnavailable";

function skipAll(task: RunnerTask, reason: string): void {
  if (task.type === "test") {
    task.mode = "skip";
    (task.meta as Record<string, unknown>)[E2E_UNAVAILABLE_META] = reason;
    // `note` is what the reporters print after a skipped test (as for `context.skip(note)`).
    task.result = { state: "skip", note: reason } as RunnerTaskResult;
    return;
  }
  // Suites keep running (so each test reports its skip), without their hooks.
  const hooks = TestRunner.getSuiteHooks(task as RunnerTestSuite) as unknown as Record<string, unknown[]> | undefined;
  if (hooks) for (const key of Object.keys(hooks)) hooks[key] = [];
  for (const child of task.tasks) skipAll(child, reason);
}

/** Skips every collected e2e test with the reason the run provides as `e2eUnavailable`. */
export default class E2eSkipRunner extends TestRunner {
  override async onBeforeRunSuite(suite: RunnerTestSuite): Promise<void> {
    if (suite.file === suite) skipAll(suite, String(this.injectValue("e2eUnavailable") ?? "the e2e suite cannot run here"));
    await super.onBeforeRunSuite(suite);
  }
}
