import { defineConfig } from "vitest/config";
import { buildUnavailableContext, decideE2eUnavailable } from "./test/e2e/harness/e2e-availability.ts";

// Four projects: pure units beside the code, the CLI driven as a real process, integration tests against a real
// kube-apiserver started by the global setup (test/integration/global-setup.ts), and e2e on a real node (kubelet,
// containerd, runc; root only). The e2e project starts its node only when asked for by name (`vitest run --project
// e2e`, or LEVIATH_E2E=1) as root; otherwise its tests are still collected and each is reported skipped with the
// reason (test/e2e/harness/skip-runner.ts), so a plain `vitest run` never starts a node and never hides the suite.
const e2eUnavailable = decideE2eUnavailable({ env: process.env, uid: process.getuid?.(), argv: process.argv });

// Hooks of the CLI suites start real processes (sidecars, the controller, promtool): on a loaded machine a cold
// start takes tens of seconds, so they get the same generous bound everywhere instead of vitest's 10 s.
const CLI_HOOK_TIMEOUT_MS = 120_000;

const e2eProject = e2eUnavailable === undefined
  ? {
      // Builds what is missing (packages, binaries, images), then one control plane and one node.
      globalSetup: ["test/e2e/global-setup.ts"],
      testTimeout: 180_000,
      hookTimeout: 300_000,
    }
  : {
      runner: "test/e2e/harness/skip-runner.ts",
      globalSetup: ["test/e2e/unavailable-setup.ts"],
      provide: buildUnavailableContext(e2eUnavailable),
    };

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "cli",
          include: ["test/cli/**/*.test.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: CLI_HOOK_TIMEOUT_MS,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/integration/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          fileParallelism: false,
          ...e2eProject,
        },
      },
    ],
  },
});
