import { AgentSpecSchema } from "./agent.ts";
import { ApprovalSpecSchema, ApprovalStatusSchema } from "./approval.ts";
import { CLUSTER_POLICY_NAME, GROUP, KIND, VERSION } from "./constants.ts";
import type { CrdDefinition } from "./crd.ts";
import { FindingSchema } from "./findings.ts";
import { ENFORCEMENT_MODES, LeviathPolicySpecSchema } from "./leviath-policy.ts";
import { MAX_POOLS, PoolStatusSchema } from "./pools.ts";
import { RunSpecSchema } from "./run.ts";
import { AgentStatusSchema, ConditionSchema, NetworkEnforcementStatusSchema, RunStatusSchema } from "./status.ts";
import { z } from "zod";

const common = { group: GROUP, version: VERSION, categories: ["leviath"] };
const conditionsListMap = { "status.conditions": ["type"] };
/** The `Ready` condition's status and reason: what kstatus and `kubectl wait --for=condition=Ready` read. */
const readyColumns = (): CrdDefinition["printerColumns"] => [
  { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: "Reason", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].reason', description: "why the object is (not) Ready" },
];

/** Plural resource names, as they appear in API paths and RBAC rules. */
export const PLURAL = { agent: "agents", run: "runs", policy: "leviathpolicies", approval: "approvals" } as const;

/** The Agent CRD: one blueprint, author-owned and untrusted. */
export const AGENT_CRD: CrdDefinition = {
  ...common,
  kind: KIND.agent,
  plural: PLURAL.agent,
  singular: "agent",
  scope: "Namespaced",
  description: "A Leviath blueprint (agent.leviath): runtime image, ordered stages, sandbox requests, declared read paths, tool permissions. Author-owned and untrusted: it may only ask, the LeviathPolicy grants.",
  spec: AgentSpecSchema,
  status: AgentStatusSchema,
  specRequired: false,
  listMaps: { "spec.stages": ["name"], ...conditionsListMap },
  printerColumns: [
    ...readyColumns(),
    { name: "Valid", type: "boolean", jsonPath: ".status.valid", priority: 1 },
    { name: "Reads", type: "string", jsonPath: ".status.readPaths.display", description: "read paths granted/declared" },
    { name: "Stages", type: "integer", jsonPath: ".status.stageCount" },
  ],
  validations: [{
    rule: "!has(self.spec) || !has(self.spec.agent) || !has(self.spec.agent.name) || self.spec.agent.name == self.metadata.name",
    message: "spec.agent.name must equal metadata.name: an Agent is identified by namespace/name",
  }],
};

/** The Run CRD: one execution of an Agent. */
export const RUN_CRD: CrdDefinition = {
  ...common,
  kind: KIND.run,
  plural: PLURAL.run,
  singular: "run",
  scope: "Namespaced",
  description: "One execution of an Agent. The operator pins the Agent and LeviathPolicy generations at start and turns the run into an engine pod (runtime + leviath sidecar) and hardened sandbox pods.",
  spec: RunSpecSchema,
  status: RunStatusSchema,
  specRequired: true,
  listMaps: conditionsListMap,
  printerColumns: [
    { name: "Agent", type: "string", jsonPath: ".spec.agentRef.name" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Reason", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].reason', description: "why the run is in its phase" },
    { name: "Stage", type: "string", jsonPath: ".status.stage" },
    { name: "Taint", type: "string", jsonPath: ".status.taint.level" },
    { name: "Reads", type: "string", jsonPath: ".status.readPaths.display", priority: 1 },
  ],
};

const PolicyStatusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional().describe("The metadata.generation this status is about."),
  conditions: z.array(ConditionSchema).optional().describe("Valid (in force for new Runs, or why not), and Ready/Stalled for kstatus and kubectl wait."),
  networkEnforcement: NetworkEnforcementStatusSchema.optional(),
  findings: z.array(FindingSchema).max(100).optional()
    .describe("What misleads in the policy itself: tool names that name no tool (unknown-tool-name), grants no volume backs (read-path-grant-unbacked)."),
  pools: z.array(PoolStatusSchema).max(MAX_POOLS).optional().describe("Each warm pool's pods and what it served (docs/controller.md, Warm pools)."),
  poolsDisplay: z.string().max(256).optional().describe("Every pool's ready/size, for kubectl get."),
  enforcement: z.enum(ENFORCEMENT_MODES).optional().describe("The enforcement mode the controller last saw (spec.enforcement); a change is an Event, EnforcementLoosened or EnforcementTightened."),
  inForce: z.strictObject({
    generation: z.number().int().min(0).describe("The last generation whose spec.enforcement was enforce."),
    spec: z.string().max(1_048_576).describe("Its spec as JSON: what new Runs pin while a later generation is a warn or audit candidate."),
  }).optional().describe("The policy in force (written by the controller only; docs/operations.md, Rolling out a policy)."),
}).describe("Whether the policy is valid and in force, what it warns about, what the NetworkPolicy probe found, and the warm pools.");

/** The LeviathPolicy CRD: the cluster admin's grants and floors (upstream config.toml + policy.toml). */
export const POLICY_CRD: CrdDefinition = {
  ...common,
  kind: KIND.policy,
  plural: PLURAL.policy,
  singular: "leviathpolicy",
  shortNames: ["lpol"],
  scope: "Cluster",
  description: `The cluster admin's side of Leviath: read-path grants, sandbox floor and runtime classes, tool-permission ceilings, taint tracking, allowlist and CEL rules. A singleton named '${CLUSTER_POLICY_NAME}'.`,
  spec: LeviathPolicySpecSchema,
  status: PolicyStatusSchema,
  specRequired: false,
  listMaps: conditionsListMap,
  printerColumns: [
    ...readyColumns(),
    { name: "Mode", type: "string", jsonPath: ".spec.enforcement", description: "enforce, or warn/audit: a candidate beside the generation in force" },
    { name: "Taint", type: "boolean", jsonPath: ".spec.security.taintTracking" },
    { name: "Floor", type: "string", jsonPath: ".spec.sandbox.kind" },
    { name: "Pools", type: "string", jsonPath: ".status.poolsDisplay", description: "each warm pool's ready/size" },
  ],
  validations: [{ rule: `self.metadata.name == '${CLUSTER_POLICY_NAME}'`, message: `the LeviathPolicy is a singleton named '${CLUSTER_POLICY_NAME}'` }],
};

/** The Approval CRD: a person's answer to one pending prompt. */
export const APPROVAL_CRD: CrdDefinition = {
  ...common,
  kind: KIND.approval,
  plural: PLURAL.approval,
  singular: "approval",
  scope: "Namespaced",
  description: "A person's answer to one pending taint-gate or tool-permission prompt of a Run. A separate kind so RBAC can grant 'may approve' without 'may edit runs'.",
  spec: ApprovalSpecSchema,
  status: ApprovalStatusSchema,
  specRequired: true,
  listMaps: conditionsListMap,
  // Whether the answer reaches its prompt, at a glance: a wrong id reads Matched NoPendingPrompt, one made before
  // its Run Bound PredatesRun (the reasons, not True/False: they say why).
  printerColumns: [
    { name: "Run", type: "string", jsonPath: ".spec.runRef.name" },
    { name: "Prompt", type: "string", jsonPath: ".spec.approvalId", description: "the pending prompt's id it answers" },
    { name: "Decision", type: "string", jsonPath: ".spec.decision" },
    { name: "Bound", type: "string", jsonPath: '.status.conditions[?(@.type=="Bound")].reason', description: "BoundToRun, or why it answers nothing (PredatesRun, RunNotFound, InvalidSpec)" },
    { name: "Matched", type: "string", jsonPath: '.status.conditions[?(@.type=="Matched")].reason', description: "PendingPrompt, NoPendingPrompt, Consumed or NotApplied" },
    { name: "By", type: "string", jsonPath: ".spec.approvedBy", priority: 1 },
    { name: "Message", type: "string", jsonPath: '.status.conditions[?(@.type=="Matched")].message', priority: 1 },
  ],
  validations: [{ rule: "!has(oldSelf.spec) || self.spec == oldSelf.spec", message: "an Approval's answer cannot be changed; create a new Approval" }],
};

/** Every CRD the operator serves, in the order they are written to `crds/`. */
export const CRD_DEFINITIONS: readonly CrdDefinition[] = [AGENT_CRD, RUN_CRD, POLICY_CRD, APPROVAL_CRD];
