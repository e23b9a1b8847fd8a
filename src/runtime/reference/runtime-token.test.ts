import { describe, expect, it } from "vitest";
import { createRuntimeToken } from "./runtime-token.ts";

describe("createRuntimeToken", () => {
  it("gives the token a restarted sidecar wrote once the old one is refused, and nothing while the file holds the refused one", () => {
    let file = "a\n";
    const token = createRuntimeToken("/run/leviath-runtime/runtime-token", "a", () => file);
    expect(token.current()).toBe("a");
    expect(token.renew("a")).toBeUndefined();
    file = "b\n";
    expect(token.renew("a")).toBe("b");
    expect(token.current()).toBe("b");
    // Another caller renewed first: the token it read is the one to send, and the file is not needed for it.
    expect(token.renew("a")).toBe("b");
    expect(token.renew("b")).toBeUndefined();
  });

  it("keeps the last token when the file cannot be read or is empty", () => {
    let read: () => string = () => {
      throw new Error("ENOENT");
    };
    const token = createRuntimeToken("/x", "a", () => read());
    expect(token.renew("a")).toBeUndefined();
    read = () => "  \n";
    expect(token.renew("a")).toBeUndefined();
    expect(token.current()).toBe("a");
  });
});
