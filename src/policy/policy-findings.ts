// What the LeviathPolicy's status (and `leviath validate --config`) reports about the admin's own side: tool
// names in toolPermissions and agentToolPermissions that name no tool, and (in a cluster) grants no volume backs.
// Warnings: the policy stays in force. Pure.
import type { Finding, FindingAdvice } from "../api/findings.ts";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import { computeUnbackedGrantFindings, listPlacedGrants } from "./grant-volumes.ts";
import { computePolicyToolNameFindings } from "./tool-name-findings.ts";

/** The findings of the admin's policy; grants are checked against volumes only for a LeviathPolicy (a cluster). */
export function computePolicyFindings(policy: LeviathPolicySpec, advice: FindingAdvice): Finding[] {
  return [
    ...computePolicyToolNameFindings(policy, advice),
    ...(advice.policy === "LeviathPolicy" ? computeUnbackedGrantFindings(listPlacedGrants(policy.readPaths), policy.readPaths) : []),
  ];
}
