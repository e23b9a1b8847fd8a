// Helpers of the admission tests: install the chart's Approval admission policies as `helm template` renders them
// (without installing the chart), wait for an admission policy to take effect, and ask who the harness user is.
import { helm, kubectl, waitFor } from "../harness/index.ts";
import { CHART } from "../chart/chart-harness.ts";

/** The release and namespace the policies are rendered for: the operator's ServiceAccount is exempt by this name. */
export const POLICY_RELEASE = { name: "lev", namespace: "leviath-system" } as const;

/** The chart's Approval admission policies (templates/approval-policies.yaml), rendered and applied. */
export async function installApprovalPolicies(): Promise<{ remove(): Promise<void> }> {
  const rendered = (await helm(["template", POLICY_RELEASE.name, CHART, "--namespace", POLICY_RELEASE.namespace, "--show-only", "templates/approval-policies.yaml"])).stdout;
  await kubectl(["apply", "--server-side", "-f", "-"], { input: rendered });
  return { remove: async () => void await kubectl(["delete", "--ignore-not-found", "-f", "-"], { input: rendered, allowFailure: true }) };
}

/** Waits until `probe` (a dry run that the policy must refuse) fails: admission policies take effect shortly after creation. */
export async function waitForRefusal(probe: () => Promise<{ exitCode: number }>, what: string): Promise<void> {
  await waitFor(async () => ((await probe()).exitCode !== 0 ? true : undefined), { timeoutMs: 30_000, description: what });
}

/** The user name the harness's kubeconfig authenticates as. */
export async function whoAmI(): Promise<string> {
  return (await kubectl(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"])).stdout.trim();
}
