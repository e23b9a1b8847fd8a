import { defineConfig } from "vitest/config";

// Three projects: pure units beside the code, the CLI driven as a real process, and integration
// tests against a real kube-apiserver started by the global setup (test/integration/global-setup.ts).
// A fourth, e2e (a real node: kubelet, containerd, runc; root only), exists only when asked for by name
// (`vitest run --project e2e`, or LEVIATH_E2E=1), so a plain `vitest run` never starts a node.
const argv = process.argv;
const wantsE2e = process.env.LEVIATH_E2E === "1"
  || argv.some((arg, i) => arg === "--project=e2e" || (arg === "e2e" && (argv[i - 1] === "--project" || argv[i - 1] === "--project=")));

// Hooks of the CLI suites start real processes (sidecars, the controller, promtool): on a loaded machine a cold
// start takes tens of seconds, so they get the same generous bound everywhere instead of vitest's 10 s.
const CLI_HOOK_TIMEOUT_MS = 120_000;

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
      ...(wantsE2e
        ? [
            {
              test: {
                name: "e2e",
                include: ["test/e2e/**/*.test.ts"],
                environment: "node",
                // Builds what is missing (packages, binaries, images), then one control plane and one node.
                globalSetup: ["test/e2e/global-setup.ts"],
                testTimeout: 180_000,
                hookTimeout: 300_000,
                fileParallelism: false,
              },
            },
          ]
        : []),
    ],
  },
});
