import { describe, expect, it } from "vitest";
import { dropSandboxPodFlags } from "./sidecar-pool.ts";

describe("the Run's sidecar's command line after a pool pod's binding", () => {
  it("leaves out the pool's --sandbox-pod flags, in either form, and keeps everything else in order", () => {
    const argv = ["--pool", "--sandbox-pod", "p-sbx-a", "--workdir", "/w", "--sandbox-pod=p-sbx-b", "--listen", "127.0.0.1:8181"];
    expect(dropSandboxPodFlags(argv)).toEqual(["--pool", "--workdir", "/w", "--listen", "127.0.0.1:8181"]);
  });
});
