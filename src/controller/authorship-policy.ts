// Whether the chart's authorship admission policy is in force (docs/security.md, "Authorship"). The controller and the
// sidecars recognise their objects by marks (labels, annotations, an owner reference to leviath.dev) that only that
// policy keeps others from setting; it is checked once at start, said in one log line, and warm pools (whose pods a
// Run adopts by those marks, handing the pod's ServiceAccount the Run's Role) stay off when it is named and not in force.
import type { KubeClient } from "../kube/client.ts";
import { isApiStatus } from "../kube/errors.ts";
import { buildPath, type Resource } from "../kube/resources.ts";
import type { Logger } from "../log/logger.ts";

const ADMISSION = { group: "admissionregistration.k8s.io", version: "v1", namespaced: false } as const;
const POLICIES: Resource = { ...ADMISSION, kind: "ValidatingAdmissionPolicy", plural: "validatingadmissionpolicies" };
const BINDINGS: Resource = { ...ADMISSION, kind: "ValidatingAdmissionPolicyBinding", plural: "validatingadmissionpolicybindings" };

/** What a GET of the policy or its binding answered: the object, a 404, or another failure's message. */
export type AdmissionRead = { readonly found: { readonly spec?: unknown } } | { readonly missing: true } | { readonly error: string };

/** The policy's state as the controller reports it. */
export interface AuthorshipPolicyState {
  readonly inForce: boolean;
  readonly message: string;
}

type BindingSpec = { policyName?: unknown; validationActions?: unknown };

/** In force when the policy exists and a binding of the same name binds it with `Deny` (pure). */
export function decideAuthorshipPolicy(name: string, policy: AdmissionRead, binding: AdmissionRead): AuthorshipPolicyState {
  const absent = (what: string) => ({
    inForce: false,
    message: `the authorship admission policy ${name} is not in force (${what}): anyone who may create pods, ConfigMaps, ServiceAccounts, Roles, claims or NetworkPolicies in a Run's namespace can give them the operator's labels and owner references`,
  });
  if ("error" in policy) return absent(`reading the ValidatingAdmissionPolicy failed: ${policy.error}`);
  if ("missing" in policy) return absent("no ValidatingAdmissionPolicy of that name");
  if ("error" in binding) return absent(`reading the ValidatingAdmissionPolicyBinding failed: ${binding.error}`);
  if ("missing" in binding) return absent("no ValidatingAdmissionPolicyBinding of that name");
  const spec = (binding.found.spec ?? {}) as BindingSpec;
  if (spec.policyName !== name) return absent(`its binding binds ${JSON.stringify(spec.policyName)}`);
  if (!Array.isArray(spec.validationActions) || !spec.validationActions.includes("Deny")) return absent("its binding does not deny");
  return { inForce: true, message: `the authorship admission policy ${name} is in force: only the operator sets the marks it recognises its objects by` };
}

async function read(client: KubeClient, res: Resource, name: string): Promise<AdmissionRead> {
  try {
    return { found: await client.request<{ spec?: unknown }>("GET", buildPath(res, undefined, name)) };
  } catch (err) {
    // A 404 is also what a cluster answers that serves no admissionregistration.k8s.io/v1 policies (before 1.30).
    if (isApiStatus(err, 404)) return { missing: true };
    return { error: (err as Error).message };
  }
}

/** Reads the policy `name` and its binding (the chart names both alike). */
export async function checkAuthorshipPolicy(client: KubeClient, name: string): Promise<AuthorshipPolicyState> {
  const [policy, binding] = await Promise.all([read(client, POLICIES, name), read(client, BINDINGS, name)]);
  return decideAuthorshipPolicy(name, policy, binding);
}

/**
 * Whether warm pools run: when asked for, unless the policy named is not in force, since a Run adopts a pool pod by
 * its marks. With no policy named (a controller started by hand, the benches) nothing is checked, which the line says.
 * The one start line says what was found, and why warm pools stay off when they do.
 */
export function reportAuthorshipPolicy(log: Logger, state: AuthorshipPolicyState | undefined, warmPools: boolean): boolean {
  if (state === undefined) {
    log.warn({ warmPools }, "no --authorship-policy: nothing checks that only the operator sets the marks it recognises its objects by");
    return warmPools;
  }
  if (state.inForce) {
    log.info({ warmPools }, state.message);
    return warmPools;
  }
  log.error({ warmPools: false }, `${state.message}${warmPools ? "; warm pools stay off (a Run would adopt a pool pod by those marks)" : ""}`);
  return false;
}
