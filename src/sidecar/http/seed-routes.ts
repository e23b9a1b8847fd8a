// `POST /v1/seeds`: the runtime asks the sidecar to fill a region from its seed (files, glob, rhai), so that the
// read-path fence decides every path and the sidecar labels the content (docs/sidecar-api.md, "Seeds").
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { fillSeed, SeedSchema } from "../executors/seeds.ts";
import type { SidecarAppDeps } from "./app.ts";
import { formatZodIssue } from "./http-schemas.ts";

const Name = z.string().min(1).max(256);

/** `POST /v1/seeds`. */
export const SeedBodySchema = z.strictObject({
  region: Name,
  seed: SeedSchema,
  /** The context entry the content goes into: labelled by the sidecar with the label its sources deserve. */
  entry: z.strictObject({ region: Name, id: Name }).optional(),
});

/** Registers the seed route (only when the app knows the run's workdir). */
export function registerSeedRoutes(app: FastifyInstance, deps: SidecarAppDeps): void {
  const seeds = deps.seeds;
  if (seeds === undefined) return;
  app.post("/v1/seeds", async (req, reply) => {
    const body = SeedBodySchema.safeParse(req.body);
    if (!body.success) return reply.code(400).send({ decision: "deny", code: "invalid-request", message: formatZodIssue(body.error) });
    const enf = deps.policy.current();
    const { region, seed, entry } = body.data;
    const outcome = fillSeed(region, seed, {
      resolve: { workdir: seeds.workdir, policy: enf.readPolicy, fs: seeds.fs },
      blueprintRoot: seeds.blueprintRoot,
      workdirLabel: enf.resultLabels.get("read_file") ?? "internal",
    });
    deps.log.info({ region, seed: Object.keys(seed)[0], ok: outcome.ok, ...(outcome.ok ? { sources: outcome.sources } : { code: outcome.code }) }, "seed");
    if (!outcome.ok) return reply.code(outcome.code === "seed-unreadable" || outcome.code === "invalid-seed" ? 422 : 403).send({ decision: "deny", code: outcome.code, message: outcome.message });
    const level = entry ? deps.session.label(entry.region, entry.id, outcome.label) : outcome.label;
    if (entry) deps.metrics.taint(deps.session.context.level(), enf.runPolicy.taint.tracking);
    return { region, content: outcome.content, sources: outcome.sources, label: outcome.label, ...(entry ? { entry: { ...entry, level } } : {}), taint: deps.session.context.level() };
  });
}
