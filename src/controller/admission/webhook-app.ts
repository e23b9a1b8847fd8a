// The validating webhook's HTTP side: an AdmissionReview (admission.k8s.io/v1) in, the same review with a response
// out. The app never listens (webhook-server.ts does); anything it cannot read is a 400, which the API server treats
// as a failed call and, with failurePolicy Fail, as a refusal.
import { fastify, type FastifyInstance } from "fastify";
import { z } from "zod";
import { computeAdmissionProblem, type AdmittedObject } from "./spec-admission.ts";

/** The path the ValidatingWebhookConfiguration calls. */
export const WEBHOOK_PATH = "/validate";

/**
 * The name of the webhook for Agents, Runs and Approvals in the ValidatingWebhookConfiguration (what kubectl prints
 * when it refuses); it fails closed.
 */
export const WEBHOOK_NAME = "specs.leviath.dev";

/** The name of the webhook for the LeviathPolicy (the same path); skipped while no replica answers. */
export const POLICY_WEBHOOK_NAME = "policy.leviath.dev";

const ADMISSION_API = "admission.k8s.io/v1";

// Objects are up to etcd's 1.5 MiB each; an UPDATE carries two.
const MAX_REVIEW_BYTES = 8 * 1024 * 1024;

const ObjectSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().optional(), namespace: z.string().optional() }).optional(),
  spec: z.unknown().optional(),
});

const ReviewSchema = z.looseObject({
  apiVersion: z.literal(ADMISSION_API),
  kind: z.literal("AdmissionReview"),
  request: z.looseObject({
    uid: z.string().min(1),
    kind: z.looseObject({ group: z.string(), kind: z.string() }),
    operation: z.string(),
    object: ObjectSchema.nullish(),
    oldObject: ObjectSchema.nullish(),
  }),
});

/** What a review answered, for the log and the metrics. */
export interface AdmissionVerdict {
  kind: string;
  operation: string;
  name: string | undefined;
  allowed: boolean;
  message?: string;
}

/** The webhook app; `onVerdict` sees every answer. */
export function buildWebhookApp(onVerdict: (v: AdmissionVerdict) => void = () => {}, serverOptions: Record<string, unknown> = {}): FastifyInstance {
  const app = fastify({ logger: false, bodyLimit: MAX_REVIEW_BYTES, ...serverOptions });
  app.post(WEBHOOK_PATH, async (req, reply) => {
    const parsed = ReviewSchema.safeParse(req.body);
    if (!parsed.success) {
      reply.code(400);
      return { error: `not an ${ADMISSION_API} AdmissionReview: ${parsed.error.issues[0]?.message ?? "invalid"}` };
    }
    const { uid, kind, operation, object, oldObject } = parsed.data.request;
    const obj: AdmittedObject = object ?? {};
    const problem = kind.group === "leviath.dev"
      ? computeAdmissionProblem(kind.kind, obj, operation === "UPDATE" ? oldObject ?? undefined : undefined)
      : `${kind.group}/${kind.kind} is not a leviath.dev kind`;
    onVerdict({ kind: kind.kind, operation, name: obj.metadata?.name, allowed: problem === undefined, ...(problem ? { message: problem } : {}) });
    return {
      apiVersion: ADMISSION_API,
      kind: "AdmissionReview",
      response: problem === undefined
        ? { uid, allowed: true }
        : { uid, allowed: false, status: { code: 422, reason: "Invalid", message: `${kind.kind} ${obj.metadata?.name ?? ""}: ${problem}` } },
    };
  });
  return app;
}
