// The context endpoints (labels are assigned here, never by the caller), the stage, the runtime's warnings, and the
// prompts: listed for everyone, answered over HTTP only standalone and only with the approval token.
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { SidecarAppDeps } from "./app-deps.ts";
import { hasBearer } from "./request-guard.ts";
import {
  AnswerBodySchema, buildRefusalMessage, ContextEntriesBodySchema, EvictionsBodySchema, formatZodIssue, StageBodySchema, WarningsBodySchema, type RefusalCode, type RefusalMessageArgs,
} from "../../api/sidecar-contract.ts";
import { refuse } from "./refusal-reply.ts";

/** A refusal of these routes: `{code, message}`, from the code's row. */
function refusal<C extends RefusalCode>(code: C, ...args: RefusalMessageArgs<C>) {
  return { code, message: buildRefusalMessage(code, ...args) };
}

function invalid(message: string) {
  return refusal("invalid-request", message);
}

/** Registers the context, stage and approval routes. */
export function registerContextRoutes(app: FastifyInstance, deps: SidecarAppDeps): void {
  const { session } = deps;
  const taintChanged = () => deps.metrics.taint(session.context.level(), deps.policy.current().runPolicy.taint.tracking);
  const regions = () => {
    const names = [...new Set(session.context.entries().map((e) => e.region))];
    return names.map((region) => ({ region, level: session.context.regionLevel(region) }));
  };

  app.get("/v1/context/taint", async () => ({
    tracking: deps.policy.current().runPolicy.taint.tracking,
    level: session.context.level(),
    // Only where the policy enforces integrity: a policy without it answers as before.
    ...(deps.policy.current().runPolicy.integrity.enforce ? { integrity: session.integrity.integrity() } : {}),
    regions: regions(),
  }));

  app.get("/v1/context/entries", async () => ({
    entries: session.context.entries().map((e) => ({ region: e.region, id: e.entryId, level: e.level })),
  }));

  app.post("/v1/context/entries", async (req, reply) => {
    const body = ContextEntriesBodySchema.safeParse(req.body);
    if (!body.success) return refuse(reply, invalid(formatZodIssue(body.error)));
    const labelled = body.data.entries.map((e) => {
      if (e.source === "model") return { region: e.region, id: e.id, level: session.labelModelWrite(e.region, e.id, e.text) };
      // An input is public and trusted (the Run's task, its user), unless the id already holds something higher or untrusted: that label stays.
      return { region: e.region, id: e.id, level: session.label(e.region, e.id, "public", { integrity: "trusted", text: e.text }) };
    });
    taintChanged();
    return { labelled, taint: session.context.level() };
  });

  app.post("/v1/context/evictions", async (req, reply) => {
    const body = EvictionsBodySchema.safeParse(req.body);
    if (!body.success) return refuse(reply, invalid(formatZodIssue(body.error)));
    let evicted = 0;
    for (const e of body.data.entries) if (session.evict(e.region, e.id)) evicted++;
    for (const region of body.data.regions) evicted += session.clearRegion(region);
    taintChanged();
    return { evicted, taint: session.context.level() };
  });

  app.post("/v1/stage", async (req, reply) => {
    const body = StageBodySchema.safeParse(req.body);
    if (!body.success) return refuse(reply, invalid(formatZodIssue(body.error)));
    const moved = deps.service.moveStage(body.data.stage, { kind: "runtime", callId: `stage-${randomUUID()}` });
    if (!moved.ok) return refuse(reply, { code: moved.code, message: moved.message });
    return { stage: moved.stage, index: moved.index, changed: moved.changed };
  });

  // Where the run is: the stage, its index and its edges (an adapter that runs a client once per stage reads it).
  app.get("/v1/stage", async () => {
    const { index, stage } = deps.service.currentStage();
    return { stage: stage.name, index, ...(stage.transitions === undefined ? {} : { transitions: stage.transitions }) };
  });

  app.post("/v1/warnings", async (req, reply) => {
    const body = WarningsBodySchema.safeParse(req.body);
    if (!body.success) return refuse(reply, invalid(formatZodIssue(body.error)));
    const added = deps.warnings.add(body.data.warnings);
    return { added, kept: deps.warnings.list().length, omitted: deps.warnings.omitted };
  });

  app.get("/v1/approvals", async () => ({ approvals: deps.approvals.list() }));

  app.post<{ Params: { id: string } }>("/v1/approvals/:id", async (req, reply) => {
    const local = deps.localApprovals;
    if (local.mode === "disabled") return refuse(reply, refusal("approvals-by-resource"));
    if (!hasBearer(req, local.token)) return refuse(reply, refusal("approval-token-required"));
    const body = AnswerBodySchema.safeParse(req.body);
    if (!body.success) return refuse(reply, invalid(formatZodIssue(body.error)));
    const approval = deps.approvals.get(req.params.id);
    if (approval === undefined && deps.approvals.isWithdrawn(req.params.id)) return refuse(reply, refusal("approval-withdrawn", req.params.id));
    if (approval === undefined || !deps.service.answer(req.params.id, body.data.decision, body.data.reason)) return refuse(reply, refusal("unknown-approval", req.params.id));
    deps.log.info({ approvalId: approval.id, callId: approval.callId, decision: body.data.decision }, "approval answered");
    return { id: approval.id, callId: approval.callId, decision: body.data.decision };
  });
}
