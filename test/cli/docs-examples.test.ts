import { readFileSync, realpathSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

// Every ```console block of docs/cli.md: the `$ leviath ...` line is run from the repository root and its
// stdout must equal the lines below it (`<workdir>` stands for the canonical --workdir); a trailing `< FILE` is
// its stdin. A trailing `2>&1 >/dev/null` shows what the command says on stderr (its warnings) instead: then the
// lines below are its stderr, and it must exit 0.
const doc = readFileSync(repo("docs/cli.md"), "utf8");
const blocks = [...doc.matchAll(/```console\n\$ leviath (.*)\n([\s\S]*?)```/g)].map((m) => ({ args: (m[1] ?? "").split(" "), expected: m[2] ?? "" }));

describe("docs/cli.md examples", () => {
  it("has examples to run", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6);
  });

  it.each(blocks.map((b) => [b.args.join(" "), b] as const))("leviath %s", (_name, block) => {
    const toStderr = block.args.slice(-2).join(" ") === "2>&1 >/dev/null";
    const shown = toStderr ? block.args.slice(0, -2) : block.args;
    const redirect = shown.indexOf("<");
    const args = redirect >= 0 ? shown.slice(0, redirect) : shown;
    const input = redirect >= 0 ? readFileSync(repo(block.args[redirect + 1] ?? ""), "utf8") : "";
    const r = leviath(args, { env: { XDG_CONFIG_HOME: "/nonexistent", LEVIATH_HOME: undefined }, input });
    const wd = block.args.indexOf("--workdir");
    const workdir = wd >= 0 ? realpathSync(repo(block.args[wd + 1] ?? ".")) : "";
    if (toStderr) {
      expect(r.status).toBe(0);
      expect(r.stderr).toBe(block.expected);
      return;
    }
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(block.expected.replaceAll("<workdir>", workdir));
  });
});
