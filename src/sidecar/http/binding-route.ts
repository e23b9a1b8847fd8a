// `POST /v1/binding`: a bound pool pod's runtime (`leviath bound-exec`) asks for its Run's runtime.json and
// credentials, once (sidecar/cluster/binding-handout.ts). Only on a sidecar that took over a pool pod; the request
// guard has already checked the runtime token and the loopback Host. Every ask is recorded in the audit, by the
// hand-out the composition gives (build-sidecar.ts), never a value: the Secrets' names only. The ask the unbound
// server held while the pod waited is answered the same way (`answerBindingAsk`), before the Run's sidecar listens.
import type { FastifyInstance } from "fastify";
import { BINDING_ROUTE } from "../../api/binding.ts";
import { buildRefusalBody, lookupRefusalStatus } from "../../api/sidecar-contract.ts";
import type { Logger } from "../../log/logger.ts";
import type { BindingHandout } from "../cluster/binding-handout.ts";
import type { SidecarAppDeps } from "./app-deps.ts";

/** One ask's answer: the binding (200) or its refusal, with the status of the refusal's row. */
export interface BindingReply {
  readonly status: number;
  readonly body: unknown;
}

/** Takes the binding for one ask (recorded by the hand-out) and says it in the log: its Secrets' names, or the refusal's code. */
export async function answerBindingAsk(handout: BindingHandout, log: Pick<Logger, "info" | "warn">): Promise<BindingReply> {
  const took = await handout.take();
  if (took.ok) {
    log.info({ credentials: took.answer.credentials.map((c) => c.secretName) }, "binding handed out");
    return { status: 200, body: took.answer };
  }
  log.warn({ code: took.code }, "binding refused");
  return { status: lookupRefusalStatus(took.code), body: took.code === "binding-given" ? buildRefusalBody(took.code) : buildRefusalBody(took.code, ...took.args) };
}

/** Registers the binding route (only when the sidecar has a binding to hand out). */
export function registerBindingRoute(app: FastifyInstance, deps: SidecarAppDeps): void {
  const handout = deps.binding;
  if (handout === undefined) return;
  app.post(BINDING_ROUTE, async (_req, reply) => {
    const answer = await answerBindingAsk(handout, deps.log);
    return reply.code(answer.status).send(answer.body);
  });
}
