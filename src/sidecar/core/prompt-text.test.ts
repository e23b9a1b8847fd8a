import { describe, expect, it } from "vitest";
import { describeCallTarget, MAX_TARGET_CHARS } from "./prompt-text.ts";

describe("describeCallTarget", () => {
  it("is the command of a shell call, the path(s) of a file tool, else the URL host or recipient", () => {
    expect(describeCallTarget("shell", { command: "ls docs/" })).toBe("ls docs/");
    expect(describeCallTarget("bash", { command: "echo a\nb" })).toBe("echo a\\nb");
    expect(describeCallTarget("read_file", { path: "/data/finance/q3.csv" })).toBe("/data/finance/q3.csv");
    expect(describeCallTarget("read_files", { paths: ["a", "b"] })).toBe("a, b");
    expect(describeCallTarget("web_fetch", { url: "https://Example.com/x" })).toBe("example.com");
    expect(describeCallTarget("send_email", { to: "a@example.com", body: "x" })).toBe("a@example.com");
    expect(describeCallTarget("submit_output", { output: "x" })).toBeUndefined();
  });

  it("is cut short and never carries control characters", () => {
    const long = describeCallTarget("shell", { command: `${"x".repeat(300)}\u001b[2J` })!;
    expect(long.startsWith("x".repeat(MAX_TARGET_CHARS))).toBe(true);
    expect(long).toContain("more characters");
    expect(long).not.toContain("\u001b");
  });
});
