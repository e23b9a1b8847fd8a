// Whether this vitest run can run the e2e project (a real node), and if not, why: vitest.config.ts asks before it
// builds the project, so a run that cannot start a node still collects every e2e test and reports it skipped with
// this reason (test/e2e/harness/skip-runner.ts) instead of leaving the project out of the totals.

import type { NodeInfo } from "./provided-context.ts";

/** What the decision reads: the environment, the user id, and vitest's command line. */
export type E2eRunContext = { env: Record<string, string | undefined>; uid: number | undefined; argv: readonly string[] };

/** Whether the command line names the e2e project (`--project e2e`, `--project=e2e`). */
export function isE2eProjectNamed(argv: readonly string[]): boolean {
  return argv.some((arg, i) => arg === "--project=e2e" || (arg === "e2e" && (argv[i - 1] === "--project" || argv[i - 1] === "--project=")));
}

/** Why the e2e project cannot run in this run (undefined: it runs). */
export function decideE2eUnavailable(ctx: E2eRunContext): string | undefined {
  if (ctx.env.LEVIATH_E2E === "0") return "LEVIATH_E2E=0 turned the e2e suite off";
  if (ctx.uid !== 0) return "the e2e suite needs root (a real node: containerd, runc, cgroups, network namespaces); run it as root";
  if (ctx.env.LEVIATH_E2E !== "1" && !isE2eProjectNamed(ctx.argv)) {
    return "the e2e suite starts a real node only when asked: LEVIATH_E2E=1 or --project e2e (scripts/test asks as root, without KUBECONFIG)";
  }
  return undefined;
}

/**
 * What the e2e project provides when it cannot run: the reason, and empty stand-ins for what its files read at
 * their top level (`inject("node")`, `inject("kubeconfig")`) so their describe blocks still collect. Nothing of
 * them is used: no test or hook runs.
 */
export function buildUnavailableContext(reason: string): { e2eUnavailable: string; node: NodeInfo; kubeconfig: string; binDir: string } {
  const node: NodeInfo = {
    name: "", dataDir: "", containerdSocket: "", cgroupRoot: "", images: {}, networkPolicy: false, kubeletPort: 0,
    network: { name: "", bridge: "", subnet: "", gateway: "", serviceCidr: "" },
  };
  return { e2eUnavailable: reason, node, kubeconfig: "/nonexistent/e2e-unavailable/kubeconfig", binDir: "/nonexistent/e2e-unavailable" };
}
