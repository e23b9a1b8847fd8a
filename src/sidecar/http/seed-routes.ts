// `POST /v1/seeds`: the runtime asks the sidecar to fill a region from its seed (files, glob, rhai, command), so
// that the read-path fence decides every path, the policy decides every command, the audit records each
// resolution and the sidecar labels the content (docs/sidecar-api.md, "Seeds").
import type { FastifyInstance } from "fastify";
import type { SidecarAppDeps } from "./app-deps.ts";
import { buildRefusalBody, formatZodIssue, SeedBodySchema } from "../../api/sidecar-contract.ts";
import { refuse } from "./refusal-reply.ts";

/** Registers the seed route (only when the app knows the run's workdir). */
export function registerSeedRoutes(app: FastifyInstance, deps: SidecarAppDeps): void {
  const seeds = deps.seeds;
  if (seeds === undefined) return;
  app.post("/v1/seeds", async (req, reply) => {
    const body = SeedBodySchema.safeParse(req.body);
    if (!body.success) return refuse(reply, buildRefusalBody("invalid-request", formatZodIssue(body.error)));
    const enf = deps.policy.current();
    const { region, seed, entry } = body.data;
    const outcome = await seeds.resolve(region, seed, enf);
    deps.log.info({ region, seed: Object.keys(seed)[0], ok: outcome.ok, ...(outcome.ok ? { sources: outcome.sources } : { code: outcome.code }) }, "seed");
    // A check's refusal is 403, a seed that could not be filled 422, one whose record was not written 503: its row's.
    if (!outcome.ok) return refuse(reply, { decision: "deny", code: outcome.code, message: outcome.message });
    const level = entry ? deps.session.label(entry.region, entry.id, outcome.label) : outcome.label;
    if (entry) deps.metrics.taint(deps.session.context.level(), enf.runPolicy.taint.tracking);
    return { region, content: outcome.content, sources: outcome.sources, label: outcome.label, ...(entry ? { entry: { ...entry, level } } : {}), taint: deps.session.context.level() };
  });
}
