import { describe, expect, it } from "vitest";
import type { KubeClient } from "./client.ts";
import { readContainerState, waitForContainerRunning } from "./container-running.ts";
import { KubeApiError } from "./errors.ts";

const spec = { containers: [{ name: "sandbox" }], nodeName: "node-1" };

describe("readContainerState", () => {
  it("is running only when the container's state says so", () => {
    expect(readContainerState({ spec, status: { phase: "Running", containerStatuses: [{ name: "sandbox", state: { running: {} } }] } }, "sandbox")).toEqual({ running: true });
    expect(readContainerState({ spec, status: { phase: "Pending", containerStatuses: [{ name: "sandbox", state: { waiting: { reason: "ContainerCreating" } } }] } }, "sandbox"))
      .toEqual({ waiting: "waiting: ContainerCreating" });
    expect(readContainerState({ spec: { containers: spec.containers } }, "sandbox")).toEqual({ waiting: "Pending, not scheduled to a node yet" });
  });

  it("knows when it never will: a finished or deleted pod, a container the pod does not have", () => {
    expect(readContainerState({ spec, status: { phase: "Failed", containerStatuses: [{ name: "sandbox", state: { terminated: { reason: "Error" } } }] } }, "sandbox")).toEqual({ never: "the pod is Failed" });
    expect(readContainerState({ metadata: { deletionTimestamp: "2026-12-01T00:00:00Z" }, spec }, "sandbox")).toEqual({ never: "the pod is being deleted" });
    expect(readContainerState({ spec }, "agent")).toEqual({ never: "the pod has no such container" });
  });
});

describe("waitForContainerRunning", () => {
  function client(replies: (object | Error)[], seen: string[]): Pick<KubeClient, "request"> {
    return {
      async request<T>(_m: string, path: string): Promise<T> {
        seen.push(path);
        const r = replies.length > 1 ? replies.shift()! : replies[0]!;
        if (r instanceof Error) throw r;
        return r as T;
      },
    };
  }
  const clock = () => {
    let t = 0;
    return { now: () => t, sleep: async (ms: number) => void (t += ms) };
  };

  it("reads the pod until its container runs", async () => {
    const seen: string[] = [];
    const notFound = new KubeApiError(404, "NotFound", "pods \"p\" not found");
    const waiting = { spec, status: { containerStatuses: [{ name: "sandbox", state: { waiting: { reason: "ContainerCreating" } } }] } };
    const running = { spec, status: { phase: "Running", containerStatuses: [{ name: "sandbox", state: { running: {} } }] } };
    await waitForContainerRunning(client([notFound, waiting, running], seen), { namespace: "team", pod: "p", container: "sandbox" }, { timeoutMs: 10_000, ...clock() });
    expect(seen).toEqual(Array(3).fill("/api/v1/namespaces/team/pods/p"));
  });

  it("gives up at the bound, saying where the container stood last", async () => {
    const waiting = { spec, status: { containerStatuses: [{ name: "sandbox", state: { waiting: { reason: "ImagePullBackOff", message: "no such image" } } }] } };
    await expect(waitForContainerRunning(client([waiting], []), { namespace: "team", pod: "p", container: "sandbox" }, { timeoutMs: 3000, ...clock() }))
      .rejects.toThrow("container 'sandbox' of pod 'team/p' is not running after 3 s (waiting: ImagePullBackOff (no such image))");
  });
});
