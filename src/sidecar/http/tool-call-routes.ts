// `/v1/tool-calls`: the one entry point for every tool call, the wait on a pending one (a dropped connection, or
// no wait again before the client's last deadline, withdraws the call), and the runtime's report of a result it
// produced (which the sidecar labels).
import type { FastifyInstance } from "fastify";
import type { SidecarAppDeps } from "./app-deps.ts";
import { computeCallStatus } from "./call-status.ts";
import { onResponseDropped } from "./response-dropped.ts";
import {
  buildRefusalBody, buildRefusalMessage, DEADLINE_HEADER, DeadlineSchema, formatZodIssue, ResultBodySchema, ToolCallBodySchema, WaitQuerySchema,
} from "../../api/sidecar-contract.ts";
import { refuse } from "./refusal-reply.ts";
import { readTraceHeaders } from "../../tracing/trace-context.ts";

/** Registers the tool-call routes. */
export function registerToolCallRoutes(app: FastifyInstance, deps: SidecarAppDeps): void {
  app.post("/v1/tool-calls", async (req, reply) => {
    // A call that does not parse is still a refused call: recorded and counted by the core.
    const body = ToolCallBodySchema.safeParse(req.body);
    if (!body.success) {
      const raw: { id?: unknown; tool?: unknown } = typeof req.body === "object" && req.body !== null && !Array.isArray(req.body) ? req.body : {};
      const r = deps.service.refuseMalformed({ id: raw.id, tool: raw.tool, message: `[error] invalid tool call: ${formatZodIssue(body.error)}` });
      return reply.code(computeCallStatus(r)).send(r.body);
    }
    const deadline = DeadlineSchema.safeParse(req.headers[DEADLINE_HEADER]);
    if (!deadline.success) {
      const r = deps.service.refuseMalformed({ id: body.data.id, tool: body.data.tool, message: `[error] invalid ${DEADLINE_HEADER} header: ${formatZodIssue(deadline.error)}` });
      return reply.code(computeCallStatus(r)).send(r.body);
    }
    const r = await deps.service.submit({ ...body.data, deadline: deadline.data, trace: readTraceHeaders(req.headers) });
    return reply.code(computeCallStatus(r)).send(r.body);
  });

  app.get<{ Params: { id: string } }>("/v1/tool-calls/:id", async (req, reply) => {
    const query = WaitQuerySchema.safeParse(req.query);
    if (!query.success) return refuse(reply, buildRefusalBody("invalid-request", formatZodIssue(query.error)));
    // A client that drops its wait before the answer gave up on the call (it was told the call did not run):
    // the call is withdrawn, its prompt closed, and it never runs.
    const deadline = DeadlineSchema.safeParse(req.headers[DEADLINE_HEADER]);
    if (!deadline.success) return refuse(reply, buildRefusalBody("invalid-request", `invalid ${DEADLINE_HEADER} header: ${formatZodIssue(deadline.error)}`));
    const id = req.params.id;
    if (deadline.data !== undefined) deps.service.renewDeadline(id, deadline.data);
    onResponseDropped(reply.raw, () => deps.service.withdraw(id, "connection_closed"));
    const r = await deps.service.wait(id, query.data.wait * 1000);
    if (r === undefined) return refuse(reply, { id, decision: "deny", code: "unknown-call", message: `[error] ${buildRefusalMessage("unknown-call", id)}` });
    return reply.code(computeCallStatus(r)).send(r.body);
  });

  app.post<{ Params: { id: string } }>("/v1/tool-calls/:id/result", async (req, reply) => {
    const body = ResultBodySchema.safeParse(req.body ?? {});
    if (!body.success) return refuse(reply, { code: "invalid-request", message: formatZodIssue(body.error) });
    const r = deps.service.reportResult(req.params.id, body.data.entry, body.data.content);
    if (!r.ok) return refuse(reply, { code: r.reason, message: r.message });
    return { id: req.params.id, entry: r.entry, label: r.label, taint: deps.session.context.level() };
  });
}
