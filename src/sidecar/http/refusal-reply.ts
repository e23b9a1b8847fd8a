// A refusal answered on any route: the status is its code's row in the contract's table, never a literal.
import type { FastifyReply } from "fastify";
import { lookupRefusalStatus, type RefusalCode } from "../../api/sidecar-contract.ts";

/** Sends a refusal body (whatever its shape on the route) with the status of its code. */
export function refuse<B extends { readonly code: RefusalCode }>(reply: FastifyReply, body: B): FastifyReply {
  return reply.code(lookupRefusalStatus(body.code)).send(body);
}
