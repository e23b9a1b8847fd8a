// `kubectl leviath approve`: answers one pending prompt of a Run with an Approval (a generated name, the Run and
// the prompt's id, the decision), then waits for what the controller and the Run's sidecar made of it.
import { API_VERSION, KIND, LABEL } from "../../api/constants.ts";
import { APPROVAL_CONDITION, type ApprovalDecision, type ApprovalSpec, type ApprovalStatus } from "../../api/approval.ts";
import type { Condition } from "../../api/status.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { UsageError } from "../io.ts";
import { buildPendingRows } from "./pending.ts";
import { formatTable } from "./table.ts";
import { getRun, PluginFailure, type PluginContext, type RunObject } from "./plugin-context.ts";

/** `kubectl leviath approve --help`. */
export const APPROVE_HELP = `Usage: kubectl leviath approve RUN [PROMPT] (--once | --stage | --run | --deny) [--reason TEXT] [--timeout 30s | --no-wait]

Answers the pending prompt PROMPT (its id, as 'kubectl leviath pending' lists it) of Run RUN with a new
Approval named RUN-<random> (the API server generates the suffix). PROMPT may be left out when exactly one
prompt is pending; with several, they are listed and nothing is created (exit 2). A prompt that is not pending,
or that an Approval already answers (one not refused by the controller or the sidecar), is refused before
anything is created (exit 1), naming that Approval. Who answered is recorded from your user at admission.

Then it waits until the Run's sidecar applied the answer (the Approval's status.consumed and its message) or
the controller refused to bind it (condition Bound=False), and prints that: exit 0 when it was applied, 1 when
not, or when nothing was said within the timeout (the Approval stays; see 'kubectl get approval NAME -o yaml').

Options:
  --once            allow this call only (decision allowOnce)
  --stage           allowForStage: a tool-approval prompt's tool is allowed for the rest of the stage; a
                    taint-gate prompt reads it as allowOnce
  --run             allowForRun: a tool-approval prompt's tool is allowed for the rest of the run; at a
                    taint-gate prompt, the tool's clearance is raised for the rest of the run
                    --stage and --run cover a shell prompt's exact command line only: another command asks again.
                    An integrity hold ("was held: ...") is never remembered: each answer allows that call only.
                    A prompt for a call held for several reasons ("This call is held for N reasons") is answered
                    once for all of them: --stage and --run remember the permission's grant only (as above); the
                    gate's and integrity's reasons are allowed for that call only and are asked about again
  --deny            refuse the call (deny)
  --reason TEXT     kept with the audit record
  --timeout DUR     how long to wait for the outcome (default 30s; 30s, 2m, or seconds)
  --no-wait         print the Approval's name and exit 0 without waiting
`;

/** The decision flags, one of which is required. */
export const DECISION_FLAGS = { once: "allowOnce", stage: "allowForStage", run: "allowForRun", deny: "deny" } as const satisfies Record<string, ApprovalDecision>;

/** The one decision the flags name; none or several is a usage error. */
export function parseDecision(flags: Partial<Record<keyof typeof DECISION_FLAGS, boolean>>): ApprovalDecision {
  const chosen = (Object.keys(DECISION_FLAGS) as (keyof typeof DECISION_FLAGS)[]).filter((k) => flags[k]);
  if (chosen.length !== 1) throw new UsageError(`give exactly one of --once, --stage, --run, --deny${chosen.length ? ` (got --${chosen.join(", --")})` : ""}`);
  return DECISION_FLAGS[chosen[0]!];
}

/** An Approval as read back. */
export interface ApprovalObject {
  metadata: { name: string };
  spec?: ApprovalSpec;
  status?: ApprovalStatus;
}

/** What an Approval's status says so far: settled (applied or not, and why), or still waiting (and on what). */
export type ApprovalOutcome = { settled: true; applied: boolean; text: string } | { settled: false; text: string };

/**
 * Decides from the Approval's status: the sidecar's `consumed` and message settle it (`applied: <decision>` when the
 * prompt was answered); `Bound=False` (no such Run, made before it, an invalid spec) settles it as not applied;
 * anything else is still on its way (bound and relayed, or the controller has not seen it yet).
 */
export function decideApprovalOutcome(approval: ApprovalObject): ApprovalOutcome {
  const status = approval.status ?? {};
  if (status.consumed) {
    const message = status.message ?? "consumed";
    return { settled: true, applied: message.startsWith("applied:"), text: message };
  }
  const cond = (type: string): Condition | undefined => status.conditions?.find((c) => c.type === type);
  const bound = cond(APPROVAL_CONDITION.bound);
  if (bound?.status === "False") return { settled: true, applied: false, text: `not bound to the run (${bound.reason}): ${bound.message ?? ""}`.trimEnd() };
  const matched = cond(APPROVAL_CONDITION.matched);
  if (!bound) return { settled: false, text: "not yet bound by the controller" };
  if (matched?.status === "False") return { settled: false, text: `bound; the run has no such pending prompt (${matched.reason}): ${matched.message ?? ""}`.trimEnd() };
  return { settled: false, text: "bound and relayed; waiting for the run's sidecar to apply it" };
}

/** Options of {@link runApprove}. */
export interface ApproveOptions {
  run: string;
  prompt: string | undefined;
  decision: ApprovalDecision;
  reason: string | undefined;
  /** 0: do not wait. */
  timeoutMs: number;
}

/** The prompt id to answer: the one given, which must be pending, or the only one pending. */
async function choosePrompt(ctx: PluginContext, opts: ApproveOptions): Promise<{ id: string; uid: string | undefined }> {
  const run = await getRun(ctx, opts.run);
  const id = pickPendingId(ctx, opts, run);
  await refuseAnswered(ctx, { name: opts.run, uid: run.metadata.uid }, id);
  return { id, uid: run.metadata.uid };
}

function pickPendingId(ctx: PluginContext, opts: ApproveOptions, run: RunObject): string {
  const pending = run.status?.pendingApprovals ?? [];
  const ids = pending.map((p) => p.id);
  if (opts.prompt !== undefined) {
    if (ids.includes(opts.prompt)) return opts.prompt;
    throw new PluginFailure(`prompt '${opts.prompt}' is not pending on run '${opts.run}' (${ids.length ? `pending: ${ids.join(", ")}` : "no prompt is pending"}); no Approval created`);
  }
  if (pending.length === 1) return pending[0]!.id;
  if (pending.length === 0) throw new PluginFailure(`run '${opts.run}' has no pending prompt; no Approval created`);
  const table = formatTable(["ID", "KIND", "TOOL", "STAGE", "AGE", "PROMPT"], buildPendingRows([run], ctx.nowMs()).map((r) => r.slice(2)));
  throw new UsageError(`run '${opts.run}' has ${pending.length} pending prompts; name one:\n${table}`);
}

/** Whether an Approval still stands as the answer to `approvalId` of this Run (not refused by the controller or the sidecar). */
export function isStandingAnswer(approval: ApprovalObject & { metadata: { labels?: Record<string, string> } }, run: { name: string; uid: string | undefined }, approvalId: string): boolean {
  if (approval.spec?.runRef.name !== run.name || approval.spec.approvalId !== approvalId) return false;
  // Bound to an earlier Run of the same name: it answers nothing of this one.
  const boundTo = approval.metadata.labels?.[LABEL.runUid];
  if (boundTo !== undefined && run.uid !== undefined && boundTo !== run.uid) return false;
  const outcome = decideApprovalOutcome(approval);
  return !outcome.settled || outcome.applied;
}

/** Refuses a second answer to a prompt before it is created: it could only end NotApplied beside the first. */
async function refuseAnswered(ctx: PluginContext, run: { name: string; uid: string | undefined }, approvalId: string): Promise<void> {
  const list = await ctx.client.request<{ items: (ApprovalObject & { metadata: { labels?: Record<string, string> } })[] }>("GET", buildPath(RESOURCES.approval, ctx.namespace));
  const first = list.items.find((a) => isStandingAnswer(a, run, approvalId));
  if (first === undefined) return;
  const said = `${first.spec?.decision ?? "?"}, ${decideApprovalOutcome(first).text}`;
  throw new PluginFailure(`prompt '${approvalId}' of run '${run.name}' is already answered by approval.leviath.dev/${first.metadata.name} (${said}); no Approval created`);
}

/** Creates the Approval, then (unless told not to) waits for its outcome and prints it. */
export async function runApprove(ctx: PluginContext, opts: ApproveOptions): Promise<number> {
  const { id: approvalId } = await choosePrompt(ctx, opts);
  const body = {
    apiVersion: API_VERSION, kind: KIND.approval,
    // Approval names are DNS subdomains: the run's name, cut to leave room for the generated suffix.
    metadata: { generateName: `${opts.run.slice(0, 200).replace(/[.-]+$/, "")}-` },
    spec: { runRef: { name: opts.run }, approvalId, decision: opts.decision, ...(opts.reason === undefined ? {} : { reason: opts.reason }) },
  };
  const created = await ctx.client.request<ApprovalObject>("POST", buildPath(RESOURCES.approval, ctx.namespace), { body });
  const name = created.metadata.name;
  ctx.io.stdout(`approval.leviath.dev/${name} created: ${opts.decision} for prompt '${approvalId}' of run '${opts.run}'\n`);
  if (opts.timeoutMs === 0) return 0;
  const deadline = ctx.nowMs() + opts.timeoutMs;
  let outcome = decideApprovalOutcome(created);
  for (;;) {
    if (outcome.settled) {
      ctx.io.stdout(`${outcome.text}\n`);
      return outcome.applied ? 0 : 1;
    }
    if (ctx.nowMs() >= deadline) break;
    await ctx.sleep(500);
    outcome = decideApprovalOutcome(await ctx.client.request<ApprovalObject>("GET", buildPath(RESOURCES.approval, ctx.namespace, name)));
  }
  throw new PluginFailure(`no outcome within ${Math.round(opts.timeoutMs / 1000)}s: ${outcome.text}; see 'kubectl get approval ${name} -n ${ctx.namespace} -o yaml'`);
}
