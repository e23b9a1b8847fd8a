import { agentController } from "./agent/agent-controller.ts";
import { approvalController } from "./approval/approval-controller.ts";
import type { ControllerDeclaration } from "./controller-declaration.ts";
import { policyController } from "./leviath-policy/policy-controller.ts";
import { recordsController } from "./records/records-controller.ts";
import { runController } from "./run/run-controller.ts";

/** Every controller the operator runs, in the order their workers start. */
export const CONTROLLERS: readonly ControllerDeclaration[] = [agentController, runController, policyController, approvalController, recordsController];
