// Stages over MCP. Where the current stage has `llm_choice` edges, `tools/list` offers `next_stage` (the reference
// runtime's name for the model's choice, its `stage` argument an enum of those edges' targets), and calling it
// moves the run through the same core path as the runtime's `POST /v1/stage`: the stage-scoped grants end and a
// `stage` record goes to the audit of the stage entered; any other stage is refused `transition-not-allowed`,
// recorded. After a move the server sends `notifications/tools/list_changed` (on the call's own stream, and to
// every open 2026-era subscription, as after a move by `POST /v1/stage`): a client that lists again gets the new
// stage's tools. Nothing is evicted:
// an MCP client keeps its own conversation across the move, so the labels of what it holds stay.
import { randomUUID } from "node:crypto";
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { lookupRefusalSource } from "../../api/sidecar-contract.ts";
import { describeNextStageTool } from "../../api/tools.ts";
import type { RunStage } from "../executors/shell.ts";
import type { ToolCallService } from "../core/tool-call-service.ts";
import { buildRefusalResult, buildTextResult } from "./call-result.ts";

/** The stage's edges the model chooses among (none: `next_stage` is not offered). */
export function listChoiceEdges(stage: RunStage): readonly { readonly to: string; readonly hint: string }[] {
  return (stage.transitions ?? []).filter((e) => e.condition === "llm_choice");
}

/** `next_stage` as `tools/list` offers it in this stage, or nothing. */
export function listStageMoveTools(stage: RunStage): Tool[] {
  const edges = listChoiceEdges(stage);
  if (edges.length === 0) return [];
  return [{ ...describeNextStageTool(edges), annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } }];
}

/** What a `next_stage` call needs: the core (whose stage listeners tell every other client), and how to tell the caller. */
export interface StageMoveContext {
  readonly service: ToolCallService;
  /** Tells the calling client (its own stream) that the tool list changed. */
  readonly notifyCaller: () => Promise<void>;
}

/** One `next_stage` call: a move along one of the stage's `llm_choice` edges, or its refusal. */
export async function callNextStage(ctx: StageMoveContext, args: Record<string, unknown>): Promise<CallToolResult> {
  const { stage } = ctx.service.currentStage();
  const allowed = listChoiceEdges(stage).map((e) => e.to);
  const to = typeof args["stage"] === "string" ? args["stage"] : JSON.stringify(args["stage"] ?? null);
  const moved = ctx.service.moveStage(to, { kind: "llm_choice", callId: `mcp-${randomUUID()}`, allowed });
  if (!moved.ok) return buildRefusalResult(moved.message, { code: moved.code, source: lookupRefusalSource("transition-not-allowed") });
  if (moved.changed) await ctx.notifyCaller();
  return buildTextResult(`Entered stage '${moved.stage}'. Its tools differ from the last stage's: list the tools again before the next call.`, false);
}
