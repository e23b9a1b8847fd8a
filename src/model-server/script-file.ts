// The stand-in model as a product feature (`leviath model-server`): a script a user writes in YAML (which tool calls,
// in which order, the final answer), or an echo of what the client last sent, served through the same server and
// request checks the tests use (scripted-model-server.ts). For trying an Agent or a client without a provider key;
// it decides nothing and knows nothing: every call it asks for still goes through the sidecar.
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { formatKeyPath } from "./openai-schemas.ts";
import type { ModelProtocol } from "./request-check.ts";
import type { ScriptStep, StepSource } from "./scripted-model-server.ts";

const CallSchema = z.strictObject({
  name: z.string().min(1).describe("The tool to call, as the client offers it (over /mcp: the sidecar's tool name)."),
  args: z.record(z.string(), z.unknown()).default({}).describe("The call's arguments."),
});

const StepSchema = z.strictObject({
  text: z.string().optional().describe("The model's text in this turn (with no calls: its final answer)."),
  calls: z.array(CallSchema).optional().describe("Tool calls the model makes in this turn, in order."),
  echo: z.boolean().optional().describe("Answer with what the client sent last (the user's message or the last tool result)."),
}).refine((s) => s.text !== undefined || (s.calls?.length ?? 0) > 0 || s.echo === true, { message: "a step needs text, calls or echo: true" });

/** A model-server script as written. */
export const ModelScriptSchema = z.strictObject({
  steps: z.array(StepSchema).min(1).describe("One step per model request, in order."),
  repeat: z.boolean().default(false).describe("Start over after the last step (default: a request past the end is answered 500)."),
});

export type ModelScript = z.infer<typeof ModelScriptSchema>;

/** Parses a script's YAML (or JSON) text; a problem names the field (`steps[1].calls[0].name: ...`). */
export function parseModelScript(text: string): ModelScript {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new Error(`not YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  const parsed = ModelScriptSchema.safeParse(doc);
  if (parsed.success) return parsed.data;
  // A misspelt key is the likeliest mistake, and it also makes the key it meant missing: name the typo first.
  const issue = parsed.error.issues.find((i) => i.code === "unrecognized_keys") ?? parsed.error.issues[0]!;
  const path = issue.code === "unrecognized_keys" ? [...issue.path, issue.keys[0]!] : issue.path;
  const where = formatKeyPath(path);
  const message = issue.code === "unrecognized_keys" ? "unknown key (a step has text, calls and echo; the script has steps and repeat)" : issue.message;
  throw new Error(`${where || "the script"}: ${message}`);
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The text of a content value: a string, or the text parts of an array of blocks (tool results' content included). */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => {
    if (!isRecord(b)) return "";
    return str(b["text"]) ?? str(b["output"]) ?? (b["content"] !== undefined ? contentText(b["content"]) : "");
  }).filter(Boolean).join("\n");
}

/** What the client sent last: the last message's text, or the last tool result, for any of the three protocols. */
export function extractLastInput(protocol: ModelProtocol, body: Record<string, unknown>): string {
  if (protocol === "responses") {
    const input = body["input"];
    if (typeof input === "string") return input;
    const last = Array.isArray(input) ? input.at(-1) : undefined;
    return isRecord(last) ? str(last["output"]) ?? contentText(last["content"]) : "";
  }
  const messages = body["messages"];
  const last = Array.isArray(messages) ? messages.at(-1) : undefined;
  return isRecord(last) ? contentText(last["content"]) : "";
}

/** At most this much of the input is echoed back. */
const ECHO_MAX_CHARS = 2000;

function echoText(protocol: ModelProtocol, body: Record<string, unknown>): string {
  const text = extractLastInput(protocol, body).trim();
  return `echo: ${text.length > ECHO_MAX_CHARS ? `${text.slice(0, ECHO_MAX_CHARS)}… (${text.length - ECHO_MAX_CHARS} more characters)` : text}`;
}

/** The steps of a script, one per request; with `repeat`, round and round. */
export function createScriptSource(script: ModelScript): StepSource {
  let at = 0;
  const left = () => (script.repeat ? Number.POSITIVE_INFINITY : script.steps.length - at);
  return {
    remaining: left,
    next: ({ protocol, body }): ScriptStep | undefined => {
      if (left() <= 0) return undefined;
      const step = script.steps[at % script.steps.length]!;
      at++;
      const text = step.echo ? echoText(protocol, body) : step.text;
      return { turn: { ...(text === undefined ? {} : { text }), ...(step.calls ? { calls: step.calls } : {}) } };
    },
  };
}

/** Echo mode: every request is answered with the text the client sent last, and the model never calls a tool. */
export function createEchoSource(): StepSource {
  return createScriptSource({ steps: [{ echo: true }], repeat: true });
}
