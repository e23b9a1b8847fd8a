import { z } from "zod";
import { CredentialsSchema, ObjectNameSchema, VerbatimSchema } from "./common.ts";
import { RUN_MODES } from "./run-policy.ts";


/**
 * The only place a workspace may be mounted: `/workspace` or a directory under it. No image of the operator (the
 * sidecar's `/app`, its PATH, `/usr`, `/etc`, `/tmp`, the token and Secret mounts) has anything there, so a
 * claim filled by an earlier Run can never shadow code or files the sidecar or the runtime use.
 */
export const WORKSPACE_ROOT = "/workspace";
/** `/workspace` or `/workspace/<dir>/...`: plain segments (letters, digits, `-`, `_`, `.`; none starting with `.`). */
const WORKSPACE_PATH = /^\/workspace(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/**
 * Where the run works: one volume mounted at the same absolute path in the engine pod and in every sandbox pod.
 * Without `claimName` the operator creates a per-Run PersistentVolumeClaim; a named claim must be allowed by the
 * LeviathPolicy (`spec.ceilings.workspaceClaims`, checked by the controller).
 */
export const WorkspaceSchema = z.strictObject({
  mountPath: z.string().max(256).regex(WORKSPACE_PATH, `the workspace mount path must be ${WORKSPACE_ROOT} or a directory under it (plain names, none starting with '.')`)
    .default(WORKSPACE_ROOT)
    .describe(`Path of the workspace in the engine and sandbox pods (the run's workdir): ${WORKSPACE_ROOT} or a directory under it, nowhere else.`),
  claimName: ObjectNameSchema.optional()
    .describe("An existing PersistentVolumeClaim to work in, only if the LeviathPolicy lists it as `<namespace>/<claim>` in spec.ceilings.workspaceClaims; the operator creates `<run>-workspace` when unset."),
  size: z.string().regex(/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/, "must be a Kubernetes quantity such as 10Gi").default("1Gi")
    .describe("Requested size of the claim the operator creates."),
  storageClassName: z.string().min(1).optional().describe("Storage class of the claim the operator creates."),
  accessMode: z.enum(["ReadWriteOnce", "ReadWriteMany"]).default("ReadWriteOnce")
    .describe("ReadWriteOnce keeps the sandbox pods on the engine pod's node (pod affinity); ReadWriteMany lets them spread."),
}).describe("Where the run works: one volume at the same path in the engine pod and every sandbox pod.");
/** The workspace of a run. */
export type Workspace = z.infer<typeof WorkspaceSchema>;

/** Time limits the controller enforces on a run's pods. */
export const DeadlinesSchema = z.strictObject({
  sandboxReadySeconds: z.number().int().min(1).max(86_400).default(300)
    .describe("How long the sandbox pods may take to become Ready before `onUnavailable` applies."),
  activeDeadlineSeconds: z.number().int().min(1).max(2_592_000).optional()
    .describe("Whole-run limit from `status.startedAt` (like a Job's `activeDeadlineSeconds`): past it the Run fails with reason `DeadlineExceeded` and is torn down."),
}).describe("Time limits the controller enforces on the run's pods.");


/** What the runner wants the run to be; humans cancel through this, never by editing status. */
export const DESIRED_STATES = ["Running", "Cancelled"] as const;

/** The Run spec: one execution request (the runner's choices, never a grant). */
export const RunSpecSchema = z.strictObject({
  agentRef: z.strictObject({ name: ObjectNameSchema.describe("The Agent, in the Run's namespace.") })
    .describe("The Agent to run; its generation and the policy's are pinned when the run starts."),
  task: z.string().max(65_536).optional().describe("The task handed to the agent runtime."),
  inputs: z.record(z.string().min(1), z.string()).optional().describe("Caller inputs for the runtime (context regions), verbatim."),
  mode: z.enum(RUN_MODES).default("interactive")
    .describe("interactive: a person answers prompts; unattended: asks expire; yolo: asks waived and recorded; headless: no prompt lane."),
  allowTools: z.array(z.string().min(1)).default([]).describe("Launch allows (`--allow`): turn `ask` into `allow` for these tools, never lifting `deny`."),
  workspace: WorkspaceSchema.default({ mountPath: WORKSPACE_ROOT, size: "1Gi", accessMode: "ReadWriteOnce" }),
  deadlines: DeadlinesSchema.default({ sandboxReadySeconds: 300 }),
  ttlSecondsAfterFinished: z.number().int().min(0).max(31_536_000).optional()
    .describe("Delete the Run (and with it every child) this long after it finished; unset: keep it until someone deletes it."),
  credentials: CredentialsSchema.optional().describe("Secrets for the agent container, added to the Agent's own `credentials`."),
  desiredState: z.enum(DESIRED_STATES).default("Running").describe("Set to Cancelled to stop the run; its record is kept."),
  runtime: VerbatimSchema.optional().describe("Values for the agent runtime (model override, output format, ...), passed verbatim."),
}).describe("One execution request: the runner's choices, never a grant (the policy's ceilings apply).");
/** The Run spec as parsed (defaults applied). */
export type RunSpec = z.infer<typeof RunSpecSchema>;
/** The Run spec as written. */
export type RunSpecInput = z.input<typeof RunSpecSchema>;
