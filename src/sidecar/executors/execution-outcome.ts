// What executing an allowed call comes to, apart from the executor table so that each executor and the table
// depend on this module rather than on each other.
import type { RecordedRefusalCode } from "../../api/sidecar-contract.ts";

/** What a command's run reports beside its text. */
export interface ShellSummary {
  readonly exitCode: number | null;
  readonly timedOut: boolean;
}

/** What executing a call came to. */
export type ExecutionOutcome =
  /** It ran: the result for the model (an error text when it ran and failed). */
  | { readonly kind: "done"; readonly result: string; readonly isError: boolean; readonly shell?: ShellSummary }
  /** It could not be done after all, a refusal that is a decision (a path that changed, a result not stored). */
  | { readonly kind: "refused"; readonly code: RecordedRefusalCode; readonly message: string }
  /** The runtime runs it (answered `run`). */
  | { readonly kind: "handed-back" };
