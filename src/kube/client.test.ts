import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createDispatcherReuse, createKubeClient, loadKubeConfig } from "./client.ts";

type Fake = { id: number; closed: boolean; close(): Promise<void> };
const fake = (id: number): Fake => ({ id, closed: false, close() { this.closed = true; return Promise.resolve(); } });

describe("createDispatcherReuse", () => {
  it("keeps the first pool while it is young, and closes it once replaced", () => {
    let now = 0;
    const reuse = createDispatcherReuse(() => now, 1000) as unknown as (d: Fake | undefined) => Fake | undefined;
    const first = fake(1);
    expect(reuse(first)).toBe(first);
    now = 999;
    expect(reuse(fake(2))?.id).toBe(1);
    expect(first.closed).toBe(false);
    now = 1000;
    const third = fake(3);
    expect(reuse(third)).toBe(third);
    expect(first.closed).toBe(true);
    now = 1500;
    expect(reuse(fake(4))).toBe(third);
  });

  it("leaves a request without a pool (plain HTTP, no TLS material) as it is", () => {
    const reuse = createDispatcherReuse(() => 0);
    expect(reuse(undefined)).toBeUndefined();
  });
});

describe("loadKubeConfig", () => {
  it("switches to the context named (kubectl's --context) and refuses one the file does not have", () => {
    const file = join(mkdtempSync(join(tmpdir(), "leviath-kubeconfig-")), "config");
    writeFileSync(file, JSON.stringify({
      apiVersion: "v1", kind: "Config", "current-context": "a",
      clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443" } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "a", context: { cluster: "c", user: "u" } }, { name: "b", context: { cluster: "c", user: "u", namespace: "team-b" } }],
    }));
    expect(loadKubeConfig(file).getCurrentContext()).toBe("a");
    expect(createKubeClient(loadKubeConfig(file)).namespace).toBeUndefined();
    expect(createKubeClient(loadKubeConfig(file, "b")).namespace).toBe("team-b");
    expect(() => loadKubeConfig(file, "nope")).toThrow("context 'nope' is not in the kubeconfig");
  });
});
