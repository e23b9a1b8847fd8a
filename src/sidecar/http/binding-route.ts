// `POST /v1/binding`: a bound pool pod's runtime (`leviath bound-exec`) asks for its Run's runtime.json and
// credentials, once (sidecar/cluster/binding-handout.ts). Only on a sidecar that took over a pool pod; the request
// guard has already checked the runtime token and the loopback Host. Every ask is recorded in the audit, by the
// hand-out the composition gives (build-sidecar.ts), never a value: the Secrets' names only.
import type { FastifyInstance } from "fastify";
import { BINDING_ROUTE } from "../../api/binding.ts";
import { buildRefusalBody } from "../../api/sidecar-contract.ts";
import type { SidecarAppDeps } from "./app-deps.ts";
import { refuse } from "./refusal-reply.ts";

/** Registers the binding route (only when the sidecar has a binding to hand out). */
export function registerBindingRoute(app: FastifyInstance, deps: SidecarAppDeps): void {
  const handout = deps.binding;
  if (handout === undefined) return;
  app.post(BINDING_ROUTE, async (_req, reply) => {
    const took = await handout.take();
    if (took.ok) {
      deps.log.info({ credentials: took.answer.credentials.map((c) => c.secretName) }, "binding handed out");
      return took.answer;
    }
    deps.log.warn({ code: took.code }, "binding refused");
    return refuse(reply, took.code === "binding-given" ? buildRefusalBody(took.code) : buildRefusalBody(took.code, ...took.args));
  });
}
