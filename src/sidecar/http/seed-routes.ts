// `POST /v1/seeds`: the runtime asks the sidecar to fill a region from its seed (files, glob, rhai, command), so
// that the read-path fence decides every path, the policy decides every command, the audit records each
// resolution and the sidecar labels the content (docs/sidecar-api.md, "Seeds").
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { SeedSchema } from "../executors/seeds.ts";
import type { SidecarAppDeps } from "./app.ts";
import { formatZodIssue } from "./http-schemas.ts";

const Name = z.string().min(1).max(256);

/** A command seed (`{ command = "..." }`): run in the entry stage's sandbox when the policy covers it. */
export const CommandSeedSchema = z.strictObject({ command: z.string().min(1).max(4096) });

/** `POST /v1/seeds`. */
export const SeedBodySchema = z.strictObject({
  region: Name,
  seed: z.union([...SeedSchema.options, CommandSeedSchema]),
  /** The context entry the content goes into: labelled by the sidecar with the label its sources deserve. */
  entry: z.strictObject({ region: Name, id: Name }).optional(),
});

/** The HTTP status of a seed that was not filled: a check's refusal is 403, one that could not be filled 422. */
const statusOf = (outcome: "refused" | "failed", code: string): number => (code === "audit-failed" ? 503 : outcome === "refused" && code !== "invalid-seed" ? 403 : 422);

/** Registers the seed route (only when the app knows the run's workdir). */
export function registerSeedRoutes(app: FastifyInstance, deps: SidecarAppDeps): void {
  const seeds = deps.seeds;
  if (seeds === undefined) return;
  app.post("/v1/seeds", async (req, reply) => {
    const body = SeedBodySchema.safeParse(req.body);
    if (!body.success) return reply.code(400).send({ decision: "deny", code: "invalid-request", message: formatZodIssue(body.error) });
    const enf = deps.policy.current();
    const { region, seed, entry } = body.data;
    const outcome = await seeds.resolve(region, seed, enf);
    deps.log.info({ region, seed: Object.keys(seed)[0], ok: outcome.ok, ...(outcome.ok ? { sources: outcome.sources } : { code: outcome.code }) }, "seed");
    if (!outcome.ok) return reply.code(statusOf(outcome.outcome, outcome.code)).send({ decision: "deny", code: outcome.code, message: outcome.message });
    const level = entry ? deps.session.label(entry.region, entry.id, outcome.label) : outcome.label;
    if (entry) deps.metrics.taint(deps.session.context.level(), enf.runPolicy.taint.tracking);
    return { region, content: outcome.content, sources: outcome.sources, label: outcome.label, ...(entry ? { entry: { ...entry, level } } : {}), taint: deps.session.context.level() };
  });
}
