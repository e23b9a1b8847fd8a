// Which PersistentVolumeClaim a Run may work in, checked once when it is pinned. The workspace is mounted
// read-write into the sidecar, the agent and every sandbox pod, so a Run's creator must not pick the claim behind
// an admin's read-path volume or another Run's workspace. A Run works in the claim the operator makes for it
// (`<run>-workspace`, recognised by the uid its create was given, own-claim.ts; a claim under that name that does not
// name the Run as its controller keeps it waiting) or in one the LeviathPolicy lists as
// `<namespace>/<claim>` in `spec.ceilings.workspaceClaims`, never one a policy volume or another Run holds.
// (Where it is mounted is checked by the Run's schema: /workspace or below, api/run.ts.)
import { GROUP, KIND } from "../../api/constants.ts";
import type { LeviathPolicySpec, PolicyCeilings } from "../../api/leviath-policy.ts";
import type { Workspace } from "../../api/run.ts";
import { REASON, TERMINAL_PHASES, type RunStatus } from "../../api/status.ts";
import { formatApiTime } from "../../api/time.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildChildNames, type RunRef } from "../../sandbox/names.ts";
import { buildObjectKey } from "../object-key.ts";
import { SNAPSHOT_KEY } from "../../sandbox/run-snapshot.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import type { Blocked } from "./run-blocked.ts";

/** A claim a policy volume mounts: the policy field that names it. */
export interface PolicyClaim {
  field: string;
  claimName: string;
}

/** What the decision needs: the Run's choice, the policy, who else holds claims, and the claim as it exists. */
export interface WorkspaceClaimFacts {
  namespace: string;
  run: string;
  /** `spec.workspace.claimName` (unset: the operator's `<run>-workspace`). */
  claimName?: string | undefined;
  ceilings: PolicyCeilings;
  policyClaims: readonly PolicyClaim[];
  /** Other Runs of the namespace that hold a named claim now (not finished). */
  heldBy: readonly { run: string; claimName: string }[];
  /** The claim, when it exists: the Run the operator made it for (if any), and whether that is this Run. */
  existing?: { madeFor?: string; thisRun: boolean } | undefined;
}

/** Why the Run may not work in the claim: the condition reason and a message naming the field and the claim. */
export interface WorkspaceRefusal {
  reason: typeof REASON.refusedByPolicy | typeof REASON.workspaceInUse;
  message: string;
}

/** A Run waiting on a claim another Run holds (or a stray claim under its own name) looks again this often. */
const IN_USE_RECHECK_MS = 10_000;

/** The claims the policy's volumes mount (read paths in the sidecar, sandbox mounts in sandbox pods). */
export function listPolicyClaims(spec: Pick<LeviathPolicySpec, "readPaths" | "sandbox">): PolicyClaim[] {
  const claimOf = (volume: Record<string, unknown> | undefined) => {
    const pvc = volume?.["persistentVolumeClaim"] as { claimName?: unknown } | undefined;
    return typeof pvc?.claimName === "string" ? pvc.claimName : undefined;
  };
  const out: PolicyClaim[] = [];
  const add = (field: string, mounts: readonly { volume?: Record<string, unknown> | undefined }[] | undefined) => {
    (mounts ?? []).forEach((m, i) => {
      const claimName = claimOf(m.volume);
      if (claimName !== undefined) out.push({ field: `${field}[${i}]`, claimName });
    });
  };
  add("spec.readPaths.volumes", spec.readPaths.volumes);
  add("spec.sandbox.mounts", spec.sandbox?.mounts);
  return out;
}

/** Whether the Run may work in its claim; pure. */
export function decideWorkspaceClaim(f: WorkspaceClaimFacts): WorkspaceRefusal | undefined {
  const claim = f.claimName ?? buildChildNames(f.run).workspace;
  const field = f.claimName === undefined ? "spec.workspace" : "spec.workspace.claimName";
  const what = `${field}: PersistentVolumeClaim '${claim}'`;
  const volume = f.policyClaims.find((p) => p.claimName === claim);
  if (volume) return { reason: REASON.refusedByPolicy, message: `${what} backs the LeviathPolicy's ${volume.field}; a workspace never mounts a policy volume's claim` };
  if (f.claimName === undefined) {
    // Checked only before the Run is pinned. One that names this Run as its controller is left to the pass that
    // makes the Run's claim: never mounted unless its uid is on record, else deleted and made again (own-claim.ts).
    if (f.existing && !f.existing.thisRun) return { reason: REASON.workspaceInUse, message: `${what} exists and was not made by the operator for this Run; the Run waits until it is gone` };
    return undefined;
  }
  if (f.existing?.madeFor !== undefined && !f.existing.thisRun) {
    return { reason: REASON.workspaceInUse, message: `${what} is the workspace the operator made for Run '${f.existing.madeFor}'` };
  }
  const entry = buildObjectKey(f.namespace, claim);
  if (!f.ceilings.workspaceClaims.includes(entry)) {
    return { reason: REASON.refusedByPolicy, message: `${what} is not allowed by the LeviathPolicy (spec.ceilings.workspaceClaims has no '${entry}'); leave claimName unset to work in a claim the operator makes for this Run` };
  }
  const holder = f.heldBy.find((h) => h.claimName === claim);
  if (holder) return { reason: REASON.workspaceInUse, message: `${what} is already the workspace of Run '${holder.run}'; the Run waits until that Run has finished` };
  return undefined;
}

type RunObject = KubeObject & { spec?: { workspace?: unknown }; status?: RunStatus };

const timeOf = (t: string | Date | undefined): string => (t instanceof Date ? formatApiTime(t) : t ?? "");

/** A `claimName` as written, if it is a string (the rest of the workspace may be from before today's rules). */
const claimNameOf = (workspace: unknown): string | undefined => {
  const name = (workspace as { claimName?: unknown } | null | undefined)?.claimName;
  return typeof name === "string" ? name : undefined;
};

/** The claim pinned in a cached snapshot, read once per data object (the informer replaces objects, never edits). */
const pinnedClaims = new WeakMap<object, { claimName: string | undefined } | null>();

function readPinnedClaim(data: Record<string, string> | undefined): { claimName: string | undefined } | undefined {
  if (data === undefined) return undefined;
  let found = pinnedClaims.get(data);
  if (found === undefined) {
    try {
      const controller = JSON.parse(data[SNAPSHOT_KEY.controller] ?? "null") as { workspace?: unknown } | null;
      found = controller?.workspace === undefined ? null : { claimName: claimNameOf(controller.workspace) };
    } catch {
      found = null;
    }
    pinnedClaims.set(data, found);
  }
  return found ?? undefined;
}

/**
 * The named claim another Run holds: the one pinned in its snapshot (what its pods mount, whatever its spec says
 * since), else the one its spec names. A finished Run holds none; of two not yet pinned, the older one holds it.
 */
function heldClaimOf(cache: ClusterCache, run: RunObject, self: { name: string; created: string }): string | undefined {
  const status = run.status;
  if (status?.phase !== undefined && TERMINAL_PHASES.includes(status.phase)) return undefined;
  const pinned = status?.agent !== undefined || status?.snapshotSha256 !== undefined;
  if (!pinned && isYounger(run, self)) return undefined;
  const pinnedClaim = readOwnPinnedClaim(cache, run);
  return pinnedClaim ? pinnedClaim.claimName : claimNameOf(run.spec?.workspace);
}

/** Whether `run` was created after `self`. Creation times have one-second steps: two Runs of the same second are ordered by name. */
function isYounger(run: RunObject, self: { name: string; created: string }): boolean {
  const created = timeOf(run.metadata.creationTimestamp);
  return created > self.created || (created === self.created && run.metadata.name > self.name);
}

/** The workspace pinned in the Run's own start snapshot (the ConfigMap it controls); `undefined` when it has none. */
function readOwnPinnedClaim(cache: ClusterCache, run: RunObject): { claimName: string | undefined } | undefined {
  const cm = cache.get("configMap", run.metadata.namespace, buildChildNames(run.metadata.name).configMap) as (KubeObject & { data?: Record<string, string> }) | undefined;
  const owned = cm?.metadata.ownerReferences?.some((r) => r.controller && r.uid === run.metadata.uid) ?? false;
  return owned ? readPinnedClaim(cm?.data) : undefined;
}

/** The claim as it exists on the server (metadata only): which Run the operator made it for, if any. */
async function readExistingClaim(writer: ClusterWriter, ref: RunRef, claim: string): Promise<WorkspaceClaimFacts["existing"]> {
  const pvc = await writer.readMetadata("pvc", ref.namespace, claim);
  if (pvc === undefined) return undefined;
  const owner = pvc.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND.run && r.apiVersion.startsWith(`${GROUP}/`));
  return { ...(owner ? { madeFor: owner.name } : {}), thisRun: owner?.uid === ref.uid };
}

/** What the workspace check reads: who else holds a named claim (cache), and the claim as it exists (live). */
export type WorkspaceClaimReading = Pick<WorkspaceClaimFacts, "heldBy" | "existing">;

/** Reads what the workspace check needs, from the cache and (the claim's metadata) live. */
export async function readWorkspaceClaim(deps: { cache: ClusterCache; writer: ClusterWriter }, ref: RunRef, workspace: Workspace): Promise<WorkspaceClaimReading> {
  const claim = workspace.claimName ?? buildChildNames(ref.name).workspace;
  const self = { name: ref.name, created: timeOf(deps.cache.get("run", ref.namespace, ref.name)?.metadata.creationTimestamp) };
  // Only a Run naming a claim looks at the others (a namespace may hold thousands of Runs).
  const heldBy = workspace.claimName === undefined ? [] : deps.cache.list("run", ref.namespace).flatMap((r) => {
    const held = r.metadata.uid === ref.uid ? undefined : heldClaimOf(deps.cache, r as RunObject, self);
    return held === undefined ? [] : [{ run: r.metadata.name, claimName: held }];
  });
  return { heldBy, existing: await readExistingClaim(deps.writer, ref, claim) };
}

/** Whether the Run may work in the claim it asks for, from what {@link readWorkspaceClaim} read, or why it waits; pure. */
export function checkWorkspaceClaim(reading: WorkspaceClaimReading, ref: RunRef, workspace: Workspace, policy: LeviathPolicySpec): Blocked | undefined {
  const refusal = decideWorkspaceClaim({
    namespace: ref.namespace, run: ref.name, claimName: workspace.claimName, ceilings: policy.ceilings,
    policyClaims: listPolicyClaims(policy), heldBy: reading.heldBy, existing: reading.existing,
  });
  if (refusal === undefined) return undefined;
  return { blocked: true, phase: "Pending", reason: refusal.reason, message: refusal.message, ...(refusal.reason === REASON.workspaceInUse ? { recheckMs: IN_USE_RECHECK_MS } : {}) };
}
