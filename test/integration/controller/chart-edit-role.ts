// The chart's `<release>-edit` ClusterRole (the Agent's author, the Run's creator: docs/security.md, "Roles"),
// rendered with the real helm and bound to a user in one namespace, so a test can act as that party with kubectl
// `--as` against the real API server.
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { helm, kubectl, REPO_ROOT } from "../harness/index.ts";

/** The release the role is rendered for: its ClusterRole is `<release>-leviath-operator-edit`, shared by the files that bind it. */
const RELEASE = "attack";

/**
 * Creates the chart's edit ClusterRole (once per cluster) and binds it to `user` in `namespace` only. The user has
 * no other right: whatever else the test asks as that user, RBAC answers as it would for the chart's edit holder.
 */
export async function bindChartEditRole(namespace: string, user: string): Promise<void> {
  const rendered = (await helm(["template", RELEASE, join(REPO_ROOT, "charts/leviath-operator"), "--show-only", "templates/user-roles.yaml"])).stdout;
  const role = parseAllDocuments(rendered).map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } })
    .find((d) => d.kind === "ClusterRole" && d.metadata?.name?.endsWith("-edit") === true);
  if (!role?.metadata?.name) throw new Error("the chart renders no <release>-edit ClusterRole");
  await kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(role) });
  await kubectl(["create", "rolebinding", `${user}-edit`, "-n", namespace, `--clusterrole=${role.metadata.name}`, `--user=${user}`]);
}

/** `kubectl --as <user> <args>`: the result whatever the exit status (a Forbidden is what a test looks for). */
export const kubectlAs = (user: string, args: string[], input?: string) => kubectl([...args, "--as", user], { allowFailure: true, ...(input !== undefined ? { input } : {}) });
