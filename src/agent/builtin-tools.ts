// What the model is told about the sidecar's built-in tools when the tools come from the stage's names rather
// than from MCP's tools/list: upstream's argument names (docs/sidecar-api.md), as JSON Schema.
import type { ToolSpec } from "./providers/types.ts";

const obj = (properties: Record<string, unknown>, required: string[]): Record<string, unknown> => ({ type: "object", properties, required, additionalProperties: false });
const text = (description: string) => ({ type: "string", description });

/** The built-in tools by name. */
export const BUILTIN_TOOLS: Readonly<Record<string, ToolSpec>> = {
  read_file: { name: "read_file", description: "Read a text file. A relative path resolves against the workdir.", inputSchema: obj({ path: text("The file's path") }, ["path"]) },
  read_files: { name: "read_files", description: "Read up to 256 text files at once.", inputSchema: obj({ paths: { type: "array", items: { type: "string" }, minItems: 1, maxItems: 256 } }, ["paths"]) },
  list_dir: { name: "list_dir", description: "List a directory (directories end in /).", inputSchema: obj({ path: text("The directory (default .)") }, []) },
  write_file: { name: "write_file", description: "Write a file in the workdir, creating directories as needed.", inputSchema: obj({ path: text("The file's path"), content: text("The whole new content") }, ["path", "content"]) },
  edit_file: { name: "edit_file", description: "Replace one exact occurrence of old_str with new_str in a file.", inputSchema: obj({ path: text("The file's path"), old_str: text("Text that occurs exactly once"), new_str: text("Its replacement") }, ["path", "old_str", "new_str"]) },
  shell: { name: "shell", description: "Run a shell command in the stage's sandbox; returns stdout, stderr and the exit code.", inputSchema: obj({ command: text("The command line (sh -c)") }, ["command"]) },
  bash: { name: "bash", description: "Run a shell command in the stage's sandbox (an alias of shell).", inputSchema: obj({ command: text("The command line (sh -c)") }, ["command"]) },
  submit_output: { name: "submit_output", description: "Hand over the run's final answer (at most 262,144 bytes). Call it once the answer is complete.", inputSchema: obj({ output: text("The final answer") }, ["output"]) },
};

/** Tools a stage offers when it lists none (upstream's file tools and shell). */
export const DEFAULT_STAGE_TOOLS = ["read_file", "read_files", "list_dir", "write_file", "edit_file", "shell"] as const;

/** The spec of a named tool: the built-in's, or an open object schema for a tool the runtime has no schema for. */
export function describeTool(name: string): ToolSpec {
  return BUILTIN_TOOLS[name] ?? { name, description: `The tool '${name}'.`, inputSchema: { type: "object", additionalProperties: true } };
}
