import { describe, expect, it } from "vitest";
import { detectSourceFormat } from "./source-format.ts";

describe("detectSourceFormat", () => {
  it("reads a Kubernetes resource as YAML whatever the name, comments and document markers first", () => {
    expect(detectSourceFormat("/dev/fd/63", "# the cluster's\napiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\n")).toBe("yaml");
    expect(detectSourceFormat("-", "---\napiVersion: v1\n")).toBe("yaml");
    expect(detectSourceFormat("policy.toml", '{"apiVersion": "v1", "kind": "List", "items": []}')).toBe("yaml");
    expect(detectSourceFormat("x", '"apiVersion": leviath.dev/v1alpha1\n')).toBe("yaml");
  });

  it("reads upstream's tables and keys as TOML whatever the name", () => {
    expect(detectSourceFormat("/dev/fd/63", "# grants\n[agent_read_paths.cto]\nallow = []\n")).toBe("toml");
    expect(detectSourceFormat("agent.yaml", "[[allowlist]]\ntool = 'x'\n")).toBe("toml");
    expect(detectSourceFormat("-", 'taint_tracking = true\nurl = "http://x:1"\n')).toBe("toml");
    expect(detectSourceFormat("-", 'security.read_paths = ["a:b"]\n')).toBe("toml");
  });

  it("falls back to the extension, then TOML, when the content does not tell", () => {
    expect(detectSourceFormat("empty.yaml", "")).toBe("yaml");
    expect(detectSourceFormat("empty.yml", "# nothing\n")).toBe("yaml");
    expect(detectSourceFormat("agent.leviath", "")).toBe("toml");
    expect(detectSourceFormat("-", "???")).toBe("toml");
  });
});
