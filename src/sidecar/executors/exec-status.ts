// The final status of a pods/exec stream, as the API server sends it on the error channel: shared by the shell,
// the sweep that follows it and the stdio servers, so none of them imports another for it.
import type { V1Status } from "@kubernetes/client-node";

/** The exit code in an exec's final status: 0 on Success, the `ExitCode` cause otherwise; else an error text. */
export function parseExecStatus(status: V1Status): { exitCode: number } | { error: string } {
  if (status.status === "Success") return { exitCode: 0 };
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = cause?.message === undefined ? NaN : Number(cause.message);
  if (Number.isInteger(code)) return { exitCode: code };
  return { error: status.message ?? status.reason ?? "exec failed" };
}
