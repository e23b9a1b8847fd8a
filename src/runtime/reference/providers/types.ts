// The runtime's view of a model, whatever wire protocol the provider speaks: a conversation in, one turn out.

/** A tool the model may call: its name, what it does and the JSON Schema of its arguments. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

/** One tool call the model asked for, with the provider's call id. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** One message of the conversation (the system prompt travels apart, as both protocols want it). */
export type ChatMessage =
  | { readonly role: "user"; readonly text: string }
  | { readonly role: "assistant"; readonly text: string; readonly toolCalls: readonly ToolCall[] }
  | { readonly role: "tool"; readonly callId: string; readonly name: string; readonly content: string; readonly isError: boolean };

/** Sampling settings the runtime passes on (the ones docs/runtime.md lists as honoured). */
export interface SamplingSettings {
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly maxTokens?: number;
  readonly stop?: readonly string[];
}

/** One request for the model's next turn. */
export interface ModelRequest {
  readonly model: string;
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSpec[];
  readonly sampling: SamplingSettings;
}

/** Why the model stopped: it wants tools run, it is done, or it ran out of room. */
export type StopReason = "tool_calls" | "end" | "max_tokens" | "other";

/** The model's turn. */
export interface ModelTurn {
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly stopReason: StopReason;
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number };
}

/** A model provider behind one wire protocol. */
export interface ModelProvider {
  /** `anthropic`, `openai`, or the name the blueprint gave a self-hosted one. */
  readonly name: string;
  complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelTurn>;
}

/** A provider failed for good (after its retries): the message names the provider and what it answered. */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
  /** The HTTP status, when the provider answered at all. */
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}
