// A response whose connection closed before it was written: its client is gone and will never read the answer.
import type { ServerResponse } from "node:http";

/** Calls `then` once if the response's connection closes (or already closed) before the response was written. */
export function onResponseDropped(res: ServerResponse, then: () => void): void {
  const check = () => {
    if (!res.writableFinished) then();
  };
  if (res.closed) check();
  else res.once("close", check);
}
