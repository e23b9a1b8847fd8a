import { describe, expect, it } from "vitest";
import { decideAwaitingCondition } from "./awaiting-condition.ts";

const prompt = (id: string, tool: string, target?: string) => ({ id, kind: "tool_approval" as const, tool, stage: "survey", ...(target === undefined ? {} : { target }) });

describe("decideAwaitingCondition", () => {
  it("names the one pending prompt's id, tool, target and the command that answers it", () => {
    expect(decideAwaitingCondition("digest", [prompt("tool-c1", "shell", "ls docs/")])).toEqual({
      type: "AwaitingApproval", status: "True", reason: "PendingApproval",
      message: `prompt 'tool-c1' (shell "ls docs/", stage survey) waits; answer with 'kubectl leviath approve digest tool-c1 --once' (or --deny)`,
    });
  });

  it("lists a few of several prompts and counts the rest; none pending is False", () => {
    const many = ["a", "b", "c", "d", "e"].map((id) => prompt(id, "web_fetch", "example.com"));
    const c = decideAwaitingCondition("r", many);
    expect(c.message).toBe(`5 prompts wait: 'a' (web_fetch "example.com", stage survey), 'b' (web_fetch "example.com", stage survey), 'c' (web_fetch "example.com", stage survey) and 2 more; answer with 'kubectl leviath approve r a --once' (or --deny)`);
    expect(decideAwaitingCondition("r", [{ id: "g", kind: "taint_gate", tool: "submit_output" }]).message).toContain("prompt 'g' (submit_output) waits");
    expect(decideAwaitingCondition("r", [])).toMatchObject({ status: "False", reason: "NoPendingApproval" });
    expect(decideAwaitingCondition("r", undefined)).toMatchObject({ status: "False", reason: "NoPendingApproval" });
  });
});
