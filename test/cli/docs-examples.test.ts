import { readFileSync, realpathSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

// Every ```console block of docs/cli.md: the `$ leviath ...` line is run from the repository root and its
// stdout must equal the lines below it (`<workdir>` stands for the canonical --workdir).
const doc = readFileSync(repo("docs/cli.md"), "utf8");
const blocks = [...doc.matchAll(/```console\n\$ leviath (.*)\n([\s\S]*?)```/g)].map((m) => ({ args: (m[1] ?? "").split(" "), expected: m[2] ?? "" }));

describe("docs/cli.md examples", () => {
  it("has examples to run", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6);
  });

  it.each(blocks.map((b) => [b.args.join(" "), b] as const))("leviath %s", (_name, block) => {
    const r = leviath(block.args, { env: { XDG_CONFIG_HOME: "/nonexistent", LEVIATH_HOME: undefined } });
    const wd = block.args.indexOf("--workdir");
    const workdir = wd >= 0 ? realpathSync(repo(block.args[wd + 1] ?? ".")) : "";
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(block.expected.replaceAll("<workdir>", workdir));
  });
});
