// What `tools/list` offers over MCP: the built-ins the sidecar itself executes (file tools, shell,
// `submit_output`) that the current stage offers, each with its JSON Schema and honest annotations. Tools a
// `/v1` runtime executes itself (web, context, todo tools) are not offered: an MCP client has no way to run a
// tool it called and report the result.
import { z } from "zod";
import type { Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { isToolOffered, ShellArgsSchema } from "../core/call-inputs.ts";
import type { Enforcement } from "../core/enforcement.ts";
import { RESULT_TOOL } from "../core/run-result.ts";
import { FILE_TOOL_ARGS } from "../executors/file-tools.ts";
import type { RunStage } from "../executors/shell.ts";
import type { GatewayTool, ToolGateway } from "../core/tool-gateway.ts";

/** `submit_output {output}`: the Run's answer. */
const SubmitOutputArgsSchema = z.object({ output: z.string() });

interface BuiltinEntry {
  readonly description: string;
  readonly schema: z.ZodType;
  readonly annotations: ToolAnnotations;
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** The built-ins an MCP client may call, in the order they are listed. */
const BUILTINS: ReadonlyMap<string, BuiltinEntry> = new Map<string, BuiltinEntry>([
  ["read_file", { description: "Read a text file (a path in the workdir or under a granted read path).", schema: FILE_TOOL_ARGS.read_file, annotations: READ_ONLY }],
  ["read_files", { description: "Read several text files at once.", schema: FILE_TOOL_ARGS.read_files, annotations: READ_ONLY }],
  ["list_dir", { description: "List a directory's entries.", schema: FILE_TOOL_ARGS.list_dir, annotations: READ_ONLY }],
  ["write_file", {
    description: "Write a file in the workdir, replacing it.", schema: FILE_TOOL_ARGS.write_file,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }],
  ["edit_file", {
    description: "Replace one exact occurrence of old_str with new_str in a workdir file.", schema: FILE_TOOL_ARGS.edit_file,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  }],
  ["shell", {
    description: "Run a shell command in the stage's sandbox; its output can reach the network, so it is taint-gated.", schema: ShellArgsSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  }],
  [RESULT_TOOL, {
    description: "Hand over the run's final answer (it leaves the machine, so it is taint-gated like any outbound call).", schema: SubmitOutputArgsSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  }],
]);

function toInputSchema(schema: z.ZodType): Tool["inputSchema"] {
  // `io: "input"`: defaults (list_dir's path) make a field optional for the caller.
  const json = z.toJSONSchema(schema, { io: "input" }) as Record<string, unknown>;
  delete json["$schema"];
  return { ...json, type: "object" } as Tool["inputSchema"];
}

/** The JSON Schemas, computed once: they never change. */
const BUILTIN_TOOLS: ReadonlyMap<string, Tool> = new Map(
  [...BUILTINS].map(([name, e]) => [name, { name, description: e.description, inputSchema: toInputSchema(e.schema), annotations: e.annotations }]),
);

/**
 * A gateway tool as listed: upstream's name (prefixed), description and input schema. Its annotations are the
 * sidecar's, not the server's: a server's `readOnlyHint` is its own claim, and the gate treats the tool as
 * outbound unless the admin classified it.
 */
function toListedGatewayTool(t: GatewayTool): Tool {
  return {
    name: t.name, inputSchema: t.tool.inputSchema,
    ...(t.tool.description === undefined ? {} : { description: t.tool.description }),
    annotations: { ...(t.tool.annotations?.title === undefined ? {} : { title: t.tool.annotations.title }), openWorldHint: true },
  };
}

/** The tools `tools/list` answers with in this stage. */
export function listStageTools(enf: Enforcement, stage: RunStage, gateway?: ToolGateway): Tool[] {
  const tools: Tool[] = [];
  for (const [name, tool] of BUILTIN_TOOLS) if (isToolOffered(stage, enf.offeredTools, name, gateway)) tools.push(tool);
  // `bash` only where the stage spells it out: listing both would offer one tool twice.
  if (stage.availableTools?.includes("bash") === true) tools.push({ ...BUILTIN_TOOLS.get("shell")!, name: "bash" });
  for (const t of gateway?.tools() ?? []) if (isToolOffered(stage, enf.offeredTools, t.name, gateway)) tools.push(toListedGatewayTool(t));
  return tools;
}
