import { describe, expect, it } from "vitest";
import { getBuildInfo } from "../../config/build-info.ts";
import type { CliIo } from "../io.ts";
import { runKubectlPlugin } from "./kubectl.ts";

function capture(): { io: CliIo; out: () => string; err: () => string } {
  let out = "";
  let err = "";
  return { io: { stdout: (t) => (out += t), stderr: (t) => (err += t), env: {}, cwd: "/", homedir: undefined }, out: () => out, err: () => err };
}

describe("kubectl leviath argv", () => {
  it("answers --help per command without connecting, and refuses what it does not know with exit 2", async () => {
    for (const [argv, code, where, text] of [
      [["--help"], 0, "out", "Commands:"],
      [[], 2, "out", "Usage: kubectl leviath"],
      [["wait", "--help"], 0, "out", "--for PHASE"],
      [["frobnicate", "r"], 2, "err", "unknown command 'frobnicate'"],
      [["why", "--help"], 0, "out", "--syntax yaml|toml"],
      [["describe", "--help"], 0, "out", "one screen"],
      [["why", "r", "c", "extra"], 2, "err", "unexpected argument 'extra'"],
      [["why", "r", "--syntax", "json", "--kubeconfig", "/nonexistent"], 2, "err", "--syntax 'json' is not yaml or toml"],
      [["pending", "extra"], 2, "err", "unexpected argument 'extra'"],
      [["audit"], 2, "err", "RUN is required"],
      [["result", "r", "--bogus"], 2, "err", "'--bogus'"],
      // Checked before the kubeconfig is read: a usage error, not the kubeconfig's.
      [["approve", "r", "--kubeconfig", "/nonexistent"], 2, "err", "give exactly one of --once, --stage, --run, --deny"],
      [["wait", "r", "--for", "Done", "--kubeconfig", "/nonexistent"], 2, "err", "--for 'Done' is not a phase"],
      [["wait", "r", "--timeout", "soon", "--kubeconfig", "/nonexistent"], 2, "err", "--timeout 'soon' is not a duration"],
      [["audit", "r", "-o", "yaml", "--kubeconfig", "/nonexistent"], 2, "err", "-o 'yaml' is not table, calls or json"],
      [["audit", "r", "-o", "calls", "-f", "--kubeconfig", "/nonexistent"], 2, "err", "-o calls tells each call's whole story and cannot follow (-f)"],
      [["audit", "--help"], 0, "out", "-f, --follow"],
      [["--version"], 0, "out", `kubectl-leviath ${getBuildInfo().version}\n`],
      [["version"], 0, "out", "kubectl-leviath "],
    ] as const) {
      const c = capture();
      expect(await runKubectlPlugin([...argv], c.io), argv.join(" ")).toBe(code);
      expect(where === "out" ? c.out() : c.err()).toContain(text);
    }
  });

  it("says in one line when the kubeconfig does not load (exit 1)", async () => {
    const c = capture();
    expect(await runKubectlPlugin(["pending", "--kubeconfig", "/nonexistent/kubeconfig"], c.io)).toBe(1);
    expect(c.err()).toMatch(/^kubectl leviath pending: .*\n$/);
  });
});
