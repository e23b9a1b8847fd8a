// One prompt per held call (issue 44): when more than one check holds the same call (its permission asks, the taint
// gate would prompt, integrity holds it), a person is asked once, the prompt names every reason, and one answer
// settles them all. Pure: how the checks' verdicts combine, what one answer means for each check it covers, and the
// prompt's text and options. Each check's own records stay its own (decide-tool-call.ts, approval-settlement.ts).
import type { ApprovalDecision } from "../api/approval.ts";

/** The checks that can hold a call, in the order they are decided (and named in the prompt). */
export const HOLDING_CHECKS = ["permission", "gate", "integrity"] as const;
/** A check that holds a call. */
export type HoldingCheck = (typeof HOLDING_CHECKS)[number];

/** One check's verdict on a call: it lets the call through, refuses it, or holds it for a person. */
export type CheckVerdict<Deny, Hold> = { readonly kind: "allow" } | { readonly kind: "deny"; readonly deny: Deny } | { readonly kind: "ask"; readonly hold: Hold };

/** The verdicts combined: a deny refuses at once; otherwise every hold is asked about in one prompt. */
export type CombinedVerdict<Deny, Hold> = { readonly kind: "allow" } | { readonly kind: "deny"; readonly deny: Deny } | { readonly kind: "ask"; readonly holds: readonly Hold[] };

/**
 * Combines the verdicts of a call's checks (fail closed): the first deny refuses without a prompt, whatever the other
 * checks say; only when every check allows or asks, and at least one asks, is there one prompt, naming every hold
 * in the checks' order.
 */
export function combineVerdicts<Deny, Hold>(verdicts: readonly CheckVerdict<Deny, Hold>[]): CombinedVerdict<Deny, Hold> {
  const holds: Hold[] = [];
  for (const v of verdicts) {
    if (v.kind === "deny") return v;
    if (v.kind === "ask") holds.push(v.hold);
  }
  return holds.length === 0 ? { kind: "allow" } : { kind: "ask", holds };
}

/** The options of a prompt naming several reasons when none can be remembered (the gate and integrity together). */
export const HELD_ONCE_OPTIONS = ["Allow once", "Deny"] as const;

/** What "for this stage" and "for this run" remember on a prompt naming several reasons, as the prompt says it. */
export const HELD_SCOPE_NOTE = "'for this stage' or 'for this run' remembers only the permission (this exact command line, or this tool); the other reasons are allowed for this call only";

/**
 * The text of one prompt for several reasons (each a clause without its question): numbered, then the question once.
 * A reason's own text is what its own prompt would say, its trailing "Allow it?" dropped.
 */
export function buildHeldPromptText(reasons: readonly { readonly check: HoldingCheck; readonly text: string }[]): string {
  const clauses = reasons.map((r, i) => `(${i + 1}) ${stripQuestion(r.text)}`);
  const note = reasons.some((r) => r.check === "permission") ? ` (${HELD_SCOPE_NOTE}.)` : "";
  return `This call is held for ${reasons.length} reasons: ${clauses.join(" ")} Allow it?${note}`;
}

function stripQuestion(text: string): string {
  const t = text.replace(/\s*Allow it\?\s*$/u, "").trimEnd();
  return /[.?!:]$/u.test(t) ? t : `${t}.`;
}

/** What one answer to a prompt naming several reasons means for each: a refusal, or what each check lets through. */
export type HeldAnswer =
  | { readonly kind: "deny"; readonly expired: boolean }
  | {
    readonly kind: "allow";
    /** The permission's grant (when it is among the reasons): this call, the stage, or the run. */
    readonly permission: "once" | "stage" | "run";
    /** The gate's answer: once only (its clearance raise is never made by a prompt naming several reasons). */
    readonly gate: "once";
    /** Integrity's: this call only (a hold is never remembered). */
    readonly integrity: "once";
  };

const PERMISSION_SCOPE: Readonly<Record<Exclude<ApprovalDecision, "deny">, "once" | "stage" | "run">> = { allowOnce: "once", allowForStage: "stage", allowForRun: "run" };

/**
 * Maps one answer (or the prompt's expiry: `undefined`) to each reason's own answer, granting no reason more than its
 * own prompt would have for the same answer, and less where a remembered grant could widen another check: the
 * permission takes the answer's scope (as its own prompt would: the exact command line, or the tool); the taint
 * gate allows this call once (its own "for this session" raises the tool's clearance for every target, which a
 * person answering about a command line did not choose); integrity allows this call once, as its own prompt does.
 */
export function decideHeldAnswer(decision: ApprovalDecision | undefined): HeldAnswer {
  if (decision === undefined || decision === "deny") return { kind: "deny", expired: decision === undefined };
  return { kind: "allow", permission: PERMISSION_SCOPE[decision], gate: "once", integrity: "once" };
}

/**
 * The parts of a prompt built by buildHeldPromptText: its head, each reason, and the question with its note; one part
 * for any other prompt. For a display that shortens each part on its own (the `pending` table), so no reason is cut
 * away by a long one before it. Searched from the end, as a reason's own text may hold model-chosen words.
 */
export function splitHeldPromptText(text: string): readonly string[] {
  const count = /^This call is held for (\d) reasons: /u.exec(text);
  const n = count === null ? 0 : Number(count[1]);
  if (n < 2 || n > HOLDING_CHECKS.length) return [text];
  const parts: string[] = [];
  let rest = text;
  const question = rest.lastIndexOf(" Allow it?");
  if (question < 0) return [text];
  parts.unshift(rest.slice(question + 1));
  rest = rest.slice(0, question);
  for (let k = n; k >= 1; k--) {
    const at = rest.lastIndexOf(` (${k}) `);
    if (at < 0) return [text];
    parts.unshift(rest.slice(at + 1));
    rest = rest.slice(0, at);
  }
  return [rest, ...parts];
}
