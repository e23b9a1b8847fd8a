// What the sidecar's HTTP routes work with, apart from the app that registers them, so that the routes and the app
// depend on this module rather than on each other.
import type { Logger } from "../../log/logger.ts";
import type { SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { ApprovalBook } from "../core/approvals.ts";
import type { Enforcement } from "../core/enforcement.ts";
import type { RunSession } from "../core/run-session.ts";
import type { ToolCallService } from "../core/tool-call-service.ts";
import type { SeedService } from "../core/seed-service.ts";
import type { RuntimeWarnings } from "../core/runtime-warnings.ts";
import type { BindingHandout } from "../cluster/binding-handout.ts";
import type { RequestGuard } from "./request-guard.ts";
import type { PolicyRollout } from "../core/policy-rollout.ts";

/** Who may answer prompts over HTTP: a bearer token (standalone), or nobody (a cluster answers with Approvals). */
export type LocalApprovals = { readonly mode: "token"; readonly token: string } | { readonly mode: "disabled" };

/** What the routes work with. */
export interface SidecarAppDeps {
  readonly service: ToolCallService;
  readonly session: RunSession;
  readonly approvals: ApprovalBook;
  readonly policy: { current(): Enforcement; readonly lastError: string | undefined };
  readonly metrics: SidecarMetrics;
  readonly log: Logger;
  readonly localApprovals: LocalApprovals;
  readonly runName: string;
  /** Who may talk to the API at all (Host, browsers, the runtime secret). */
  readonly guard: RequestGuard;
  /** Fills seeds (`POST /v1/seeds`): the fence on paths, the policy on commands, one audit record each. */
  readonly seeds?: Pick<SeedService, "resolve">;
  /** What the runtime says it does not honour (`POST /v1/warnings`). */
  readonly warnings: RuntimeWarnings;
  /** The policy rollout reaching the Run: its snapshots, and the would-flips its status reports (absent: none). */
  readonly rollout?: PolicyRollout;
  /** A bound pool pod's hand-out of its Run's runtime.json and credentials (`POST /v1/binding`); absent elsewhere. */
  readonly binding?: BindingHandout;
}
