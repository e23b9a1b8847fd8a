import { describe, expect, it } from "vitest";
import { findIdentityTokens, MAX_IDENTITY_TOKENS, MAX_TOKEN_SCAN_CHARS } from "./identity-tokens.ts";

describe("findIdentityTokens", () => {
  it.each([
    ["a link with a scheme, trailing punctuation dropped", "see https://a.example/x?y=1.", [["url", "https://a.example/x?y=1"]]],
    ["a www host with no scheme", "Check out www.shop-252.example now!", [["url", "www.shop-252.example"]]],
    ["a bare host with a path", "go to evil.example/login, then", [["url", "evil.example/login"]]],
    ["an e-mail address", "write to bob.k@corp.example.", [["email", "bob.k@corp.example"]]],
    ["an IBAN-like account", "pay DE89370400440532013000 today", [["account", "DE89370400440532013000"]]],
    ["a phone number", "call +1 (555) 123-4567", [["phone", "+1 (555) 123-4567"]]],
    ["paths, absolute and from home", "file /home/u/docs/a.txt and ~/x/y", [["path", "/home/u/docs/a.txt"], ["path", "~/x/y"]]],
    ["a link's path is not a second token", "https://a.example/b/c/d", [["url", "https://a.example/b/c/d"]]],
    ["no token in dates, times, amounts or a file name", "on 2024-05-19 at 10:00 the total was 1,234.56 (report.docx)", []],
  ] as const)("%s", (_name, text, expected) => {
    expect(findIdentityTokens([text])).toEqual(expected.map(([kind, t]) => ({ kind, text: t })));
  });

  it("fails closed past the bound on characters scanned", () => {
    expect(findIdentityTokens(["a".repeat(MAX_TOKEN_SCAN_CHARS), "b"])).toBe("overflow");
  });

  it("fails closed past the bound on tokens", () => {
    const many = Array.from({ length: MAX_IDENTITY_TOKENS + 1 }, (_, i) => `u${i}@corp.example`).join(" ");
    expect(findIdentityTokens([many])).toBe("overflow");
    expect(findIdentityTokens([many.split(" ").slice(0, MAX_IDENTITY_TOKENS).join(" ")])).toHaveLength(MAX_IDENTITY_TOKENS);
  });
});
