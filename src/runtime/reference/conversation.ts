// The model's context: the conversation the runtime keeps, each entry with the identity the sidecar labels it
// by. When it outgrows its budget the oldest tool results are dropped (their place keeps a note, so every tool
// call still has its result) and the drops are reported as evictions: the context taint falls only that way.
import type { ChatMessage, ToolCall } from "./providers/types.ts";
import type { EntryRef } from "../../api/sidecar-contract.ts";

/** The region tool results and model turns live in (the sidecar's default). */
export const CONVERSATION_REGION = "conversation";
/** Roughly 100k tokens: a context past this is trimmed. */
export const DEFAULT_CONTEXT_BUDGET_CHARS = 400_000;

type Held = { message: ChatMessage; entry?: EntryRef };

/** The conversation of a run. */
export class Conversation {
  private readonly held: Held[] = [];
  private turns = 0;
  private readonly budgetChars: number;
  constructor(budgetChars: number = DEFAULT_CONTEXT_BUDGET_CHARS) {
    this.budgetChars = budgetChars;
  }

  /** The messages as the provider gets them. */
  messages(): ChatMessage[] {
    return this.held.map((h) => h.message);
  }

  /** A user message; `entry` when the sidecar labels it (task, inputs). */
  addUser(text: string, entry?: EntryRef): void {
    this.held.push({ message: { role: "user", text }, ...(entry ? { entry } : {}) });
  }

  /** A model turn; returns the entry to label as `source: "model"` when it has text. */
  addAssistant(text: string, toolCalls: readonly ToolCall[]): EntryRef | undefined {
    const entry = text === "" ? undefined : { region: CONVERSATION_REGION, id: `model-${++this.turns}` };
    this.held.push({ message: { role: "assistant", text, toolCalls }, ...(entry ? { entry } : {}) });
    return entry;
  }

  /** A tool result, under the call's id (the sidecar labelled it there). */
  addToolResult(call: ToolCall, content: string, isError: boolean, entry: EntryRef = { region: CONVERSATION_REGION, id: call.id }): void {
    this.held.push({ message: { role: "tool", callId: call.id, name: call.name, content, isError }, entry });
  }

  private size(): number {
    return this.held.reduce((n, h) => n + (h.message.role === "user" ? h.message.text.length : h.message.role === "assistant" ? h.message.text.length + JSON.stringify(h.message.toolCalls).length : h.message.content.length), 0);
  }

  /**
   * Drops the oldest tool results while the conversation is over budget, keeping the last `keep` results.
   * Returns the entries dropped (to report as evictions).
   */
  trim(keep = 4): EntryRef[] {
    const dropped: EntryRef[] = [];
    const results = this.held.filter((h) => h.message.role === "tool" && h.entry !== undefined);
    for (const h of results.slice(0, Math.max(0, results.length - keep))) {
      if (this.size() <= this.budgetChars) break;
      const m = h.message as Extract<ChatMessage, { role: "tool" }>;
      h.message = { ...m, content: `[evicted: the result of ${m.name} was dropped from the context to make room]` };
      dropped.push(h.entry!);
      delete h.entry;
    }
    return dropped;
  }

  /** Drops everything but the entries of `keepRegions` (a `clear` transition); returns what was dropped. */
  clear(keepRegions: ReadonlySet<string>): EntryRef[] {
    const dropped: EntryRef[] = [];
    for (let i = this.held.length - 1; i >= 0; i--) {
      const h = this.held[i]!;
      if (h.entry !== undefined && keepRegions.has(h.entry.region)) continue;
      if (h.entry !== undefined) dropped.push(h.entry);
      this.held.splice(i, 1);
    }
    return dropped.reverse();
  }
}
