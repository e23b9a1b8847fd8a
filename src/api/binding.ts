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

/**
 * A runtime started with its pool pod (`spec.pools[].runtimeStart: with-pod`, docs/runtime.md) finds in this variable
 * the file descriptor it reads its binding from: a pipe from `leviath bound-exec`, its parent, and nobody else.
 */
export const BINDING_FD_ENV = "LEVIATH_BINDING_FD";
/** The descriptor bound-exec gives a held runtime (its fourth stdio entry). */
export const BINDING_FD = 3;
/** The most a held binding's message may be: the `env` credentials (at most 16 Secrets of 1 MiB, base64 decoded) and the Run's variables. */
export const HELD_BINDING_MAX_BYTES = 17 * 1024 * 1024;

/**
 * What bound-exec writes a held runtime once the pod is bound, as one JSON document followed by the end of the pipe:
 * the Run, and the variables to add to its environment (each `env` credential's keys, LEVIATH_RUN and
 * LEVIATH_RUNTIME_CONFIG). runtime.json and the `files` credentials are on disk before it is written. The pipe's end
 * with nothing written means no binding: the runtime must exit without reading runtime.json.
 */
export const HeldBindingSchema = z.strictObject({
  run: ObjectNameSchema,
  env: z.record(z.string().min(1).max(253).regex(/^[^=\0]+$/), z.string().regex(/^[^\0]*$/)),
});
/** A held binding's message. */
export type HeldBinding = z.infer<typeof HeldBindingSchema>;
