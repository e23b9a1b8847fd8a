// Warm pools (docs/controller.md, "Warm pools"): the admin keeps engine pods of an Agent started ahead of any Run,
// holding nothing of any Run, and a matching Run adopts one and binds its policy, task and credentials late.
import { z } from "zod";

/** At most this many pools in a LeviathPolicy. */
export const MAX_POOLS = 32;
/** At most this many ready pods per pool. */
export const MAX_POOL_SIZE = 32;

/** `<namespace>/<name>` of an Agent, both parts as Kubernetes spells them (a pool lives in the Agent's namespace). */
const POOL_AGENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

/**
 * When a pool pod's runtime starts: with the pod, held on its binding (a runtime that reads LEVIATH_BINDING_FD), or
 * once the pod is bound (any runtime: `leviath bound-exec` starts it with runtime.json and the credentials in place).
 */
export const RUNTIME_STARTS = ["with-pod", "at-binding"] as const;
/** A value of `spec.pools[].runtimeStart`. */
export type RuntimeStart = (typeof RUNTIME_STARTS)[number];

/** One pool: which Agent, how many ready, unbound engine pods to keep. */
export const PoolSchema = z.strictObject({
  agent: z.string().max(317).regex(POOL_AGENT, "must be '<namespace>/<name>' of an Agent (lower-case DNS names)")
    .describe("The Agent whose Runs the pool serves, as '<namespace>/<name>'; the pool's pods run in that namespace."),
  size: z.number().int().min(0).max(MAX_POOL_SIZE)
    .describe(`How many ready, unbound engine pods to keep (0 to ${MAX_POOL_SIZE}); a Run that takes one is served warm and the pool refills.`),
  command: z.array(z.string().min(1)).min(1).max(64).optional()
    .describe("The runtime's command in a pool pod (default: the runtime kind's, `leviath agent` or `leviath adapter <kind>`). A pod cannot read its image's entrypoint, so an image whose entrypoint is another program names it here."),
  runtimeStart: z.enum(RUNTIME_STARTS).optional()
    .describe("When the runtime's process starts in a pool pod (docs/runtime.md, Warm pools): 'with-pod', at once, held until the pod is bound (it reads its binding from LEVIATH_BINDING_FD, which `leviath bound-exec` writes once the Run is bound); 'at-binding', only once the pod is bound, with runtime.json and the credentials in place. Default: 'with-pod' for the runtime kind's own command (ours read the binding), 'at-binding' with `command`."),
}).describe("A warm pool of engine pods for one Agent (docs/controller.md, Warm pools).");
/** One pool as declared. */
export type Pool = z.infer<typeof PoolSchema>;

/** The pools of a LeviathPolicy: at most {@link MAX_POOLS}, one per Agent. */
export const PoolsSchema = z.array(PoolSchema).max(MAX_POOLS)
  .superRefine((pools, ctx) => {
    const seen = new Set<string>();
    pools.forEach((p, i) => {
      if (seen.has(p.agent)) ctx.addIssue({ code: "custom", path: [i, "agent"], message: `the Agent '${p.agent}' has a pool already; one pool per Agent` });
      seen.add(p.agent);
    });
  })
  .describe(`Warm pools of engine pods, at most ${MAX_POOLS}, one per Agent: a matching Run adopts a ready pod and binds its policy, task and credentials late; a miss starts cold.`);

/** How a Run's engine pod came to be: adopted from a warm pool, or created for it. */
export const STARTED_FROM = ["pool", "cold"] as const;
/** A value of `status.startedFrom`. */
export type StartedFrom = (typeof STARTED_FROM)[number];

/** Why a Run that could have been served warm was not (a closed set: the metric's label values). */
export const POOL_MISS_REASONS = ["no-ready-pod", "not-eligible", "claim-conflict"] as const;
/** A miss's reason. */
export type PoolMissReason = (typeof POOL_MISS_REASONS)[number];

/** One pool as the controller last saw it, on the LeviathPolicy's status. */
export const PoolStatusSchema = z.strictObject({
  agent: z.string().describe("The pool's Agent, '<namespace>/<name>'."),
  size: z.number().int().min(0).describe("The declared size."),
  ready: z.number().int().min(0).describe("Unbound pods whose containers run and whose sidecar is ready."),
  starting: z.number().int().min(0).describe("Unbound pods not yet ready."),
  adoptions: z.number().int().min(0).describe("Runs served from this pool since the controller started."),
  misses: z.number().int().min(0).describe("Runs of this Agent started cold since the controller started (no ready pod, not eligible, or a lost race)."),
}).describe("A pool's pods and what it served.");
/** A pool's status. */
export type PoolStatus = z.infer<typeof PoolStatusSchema>;
