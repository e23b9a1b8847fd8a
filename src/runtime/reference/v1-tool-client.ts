// The tool client over the sidecar's /v1 API (src/runtime/sidecar-client.ts, which fails closed): the stage's tools
// come from its names (built-in schemas), a prompt is waited on until a person or its expiry settles it, and a call the
// sidecar hands back (`run`) is reported, with the result the runtime produced.
import { RESULT_TOOL } from "../../api/tools.ts";
import type { ClientAnswer, SidecarClient } from "../sidecar-client.ts";
import { DEFAULT_STAGE_TOOLS, describeTool } from "./builtin-tools.ts";
import type { ToolSpec } from "./providers/types.ts";
import type { ToolClient, ToolOutcome } from "./tool-client.ts";

/** How long one long-poll of a pending call waits (the sidecar allows up to 300 s). */
const WAIT_SECONDS = 30;

function toOutcome(a: ClientAnswer): ToolOutcome {
  if (a.decision === "allow") return { decision: "allow", content: a.result, isError: a.isError, label: a.label, taint: a.taint };
  if (a.decision === "deny") return { decision: "deny", content: a.message, isError: true, code: a.code, ...(a.failedClosed ? { failedClosed: true } : {}) };
  if (a.tool === RESULT_TOOL) return { decision: "run", content: "Output submitted: it is the Run's result.", isError: false };
  // The reference runtime executes no tool of its own: a tool the sidecar leaves to it has no implementation here.
  return { decision: "run", content: `[error] Tool '${a.tool}' has no implementation in leviath agent (reach it through an MCP server of the policy)`, isError: true };
}

/**
 * The tools of a stage as /v1 knows them: its names (or the defaults), submit_output in an output stage, each one
 * the sidecar executes; the names nothing would execute are left out (the transcript names them).
 */
export function listV1Tools(stage: Parameters<ToolClient["listTools"]>[0]): ToolSpec[] {
  const names = stage.toolNames ?? [...DEFAULT_STAGE_TOOLS];
  const all = stage.output !== undefined && !names.includes(RESULT_TOOL) ? [...names, RESULT_TOOL] : names;
  return all.flatMap((name) => describeTool(name) ?? []);
}

/** A /v1 tool client over the sidecar's client (its runtime token set). */
export function createV1ToolClient(client: SidecarClient): ToolClient {
  return {
    listTools: async (stage) => listV1Tools(stage),
    async callTool(id, name, args) {
      let answer = await client.callTool({ id, tool: name, args });
      while (answer.decision === "ask") answer = await client.waitForCall(id, name, WAIT_SECONDS);
      if (answer.decision === "run") {
        try {
          await client.reportResult(id);
        } catch (err) {
          return { decision: "deny", content: `[denied] the result of '${name}' could not be reported: ${(err as Error).message}`, isError: true, failedClosed: true };
        }
      }
      return toOutcome(answer);
    },
    close: async () => undefined,
  };
}
