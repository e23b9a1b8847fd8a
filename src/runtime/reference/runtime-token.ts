// The runtime token as a runtime holds it (docs/runtime.md, "What the runtime must do"): read from its file once the
// sidecar is healthy, and read again whenever the sidecar refuses it. Each sidecar start writes a new token to the
// same file (the kubelet restarts a native sidecar that died, in the same pod), so a runtime that read it once would
// be refused for the rest of the Run; one that reads it again on a refusal goes on with the restarted sidecar.
import { readFileSync } from "node:fs";

/** The token a runtime sends, and the way to a new one once the sidecar refused it. */
export interface RuntimeToken {
  /** The token as last read. */
  current(): string;
  /** After the sidecar refused `refused`: reads the file again; the token to send instead, or undefined when there is no other. */
  renew(refused: string | undefined): string | undefined;
}

/** A token first read as `first`, read again from `path` (through `read`, for tests) on each renewal. */
export function createRuntimeToken(path: string, first: string, read: (path: string) => string = (p) => readFileSync(p, "utf8")): RuntimeToken {
  let token = first;
  return {
    current: () => token,
    renew(refused) {
      try {
        const fresh = read(path).trim();
        if (fresh !== "") token = fresh;
      } catch {
        // Not there (a starting sidecar replaces it with a rename, so this is a sidecar gone): keep the last one.
      }
      return token === refused ? undefined : token;
    },
  };
}
