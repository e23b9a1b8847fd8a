// The objects of the scripted runtime's flow (images/runtime, scenario `flow`), shared by the Run flow and the warm
// Run: the policy granting the Agent `/data/team-notes` (a ConfigMap volume) with shell and submit_output allowed and
// taint tracking on, that ConfigMap, the two-stage Agent whose stages call what the flow calls, and credential Secrets.
import { buildTwoStageAgent, NS } from "./operator-fixture.ts";

/** The read path the flow's Agent is granted. */
export const TEAM_NOTES_PATH = "/data/team-notes";

/** The policy spec of the flow: `agent` (a name in the sandbox namespace) granted the team notes. */
export function buildFlowPolicySpec(sandbox: string, agent: string): Record<string, unknown> {
  return {
    sandbox: { kind: "container", image: sandbox, onUnavailable: "error" },
    security: { taintTracking: true },
    // Without a ceiling here shell is asked (tool approval); allowing it leaves the taint gate as the
    // only prompt, which is what the flow checks.
    toolPermissions: { shell: "allow", submit_output: "allow" },
    readPaths: {
      perAgent: { [`${NS}/${agent}`]: [TEAM_NOTES_PATH] },
      volumes: [{ path: TEAM_NOTES_PATH, volume: { configMap: { name: "team-notes" } } }],
    },
  };
}

/** The ConfigMap behind the team notes: `notes.md`, which the flow's granted read returns. */
export const TEAM_NOTES = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "team-notes", namespace: NS }, data: { "notes.md": "team notes: ship it\n" } };

/** A Secret opted in as a credential by its label: only such Secrets can be named as credentials (docs/security.md). */
export function buildCredentialSecret(name: string, data: Record<string, string>): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: NS, labels: { "leviath.dev/credential": "true" } }, stringData: data };
}

/** The flow's Agent: survey (read, shell; no network) then digest (shell, submit_output). */
export function buildFlowAgent(name: string, sandbox: string, description: string): Record<string, unknown> {
  return buildTwoStageAgent({
    name, sandbox, description, readPaths: [TEAM_NOTES_PATH], toolPermissions: { read_file: "allow", shell: "allow", submit_output: "allow" },
    surveyTools: ["read_file", "shell"], digestTools: ["shell", "submit_output"],
  });
}
