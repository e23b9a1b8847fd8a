// What a warm pool's sidecar hands the runtime beside it once the pod is bound to a Run (docs/controller.md, "Late
// binding, in the pod"): `POST /v1/binding`, answered once, over loopback, to the runtime token. Both ends parse it
// with this schema: the sidecar builds it, `leviath bound-exec` refuses anything else and starts nothing.
import { z } from "zod";
import { MAX_CREDENTIALS, ObjectNameSchema } from "./common.ts";

/** The route the binding is asked on. */
export const BINDING_ROUTE = "/v1/binding";

/**
 * How long an unbound pool sidecar holds the runtime's ask (long poll) before it answers `503 not-bound` anyway; it
 * answers sooner, the same way, when it is bound. `leviath bound-exec` then asks again at once.
 */
export const BINDING_HOLD_MS = 20_000;

/** A Secret's key as the API server allows it; never `.` or `..`, so it is one file name under the Secret's directory. */
const SecretKeySchema = z.string().min(1).max(253).regex(/^[-._a-zA-Z0-9]+$/).refine((k) => k !== "." && k !== "..", "a key is never . or ..");

/** One credential Secret as the API server returned it: its `data`, base64 as stored, with the `as` the Run's snapshot pins. */
export const BoundCredentialSchema = z.strictObject({
  secretName: ObjectNameSchema,
  as: z.enum(["env", "files"]),
  data: z.record(SecretKeySchema, z.base64()),
});
/** One bound credential. */
export type BoundCredential = z.infer<typeof BoundCredentialSchema>;

/** The binding: the Run, its runtime.json exactly as its snapshot holds it, and its credential Secrets' values. */
export const BindingAnswerSchema = z.strictObject({
  run: ObjectNameSchema,
  runtimeJson: z.string().min(2),
  credentials: z.array(BoundCredentialSchema).max(MAX_CREDENTIALS),
});
/** The binding's answer. */
export type BindingAnswer = z.infer<typeof BindingAnswerSchema>;
