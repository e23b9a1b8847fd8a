import { probe } from "../../integration/harness/loopback.ts";
import type { TlsClient } from "../../integration/harness/loopback.ts";
import type { ExitInfo } from "../../integration/harness/processes.ts";

type NodeStatus = { status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] } };

/**
 * Polls the Node object until its Ready condition is True. Fails early when the kubelet has exited, and
 * at the deadline with the last Ready condition seen (its message says what the kubelet waits for).
 */
export async function waitForNodeReady(
  server: string, tls: TlsClient, name: string, deadline: number, kubeletExit: () => ExitInfo | undefined,
): Promise<void> {
  let last = "the Node object does not exist yet";
  for (;;) {
    const exit = kubeletExit();
    if (exit) throw new Error(`kubelet exited (code ${exit.code}, signal ${exit.signal}) before node ${name} was Ready`);
    const response = await probe(`${server}/api/v1/nodes/${name}`, tls);
    if (response.status === 200) {
      const ready = (JSON.parse(response.body) as NodeStatus).status?.conditions?.find((c) => c.type === "Ready");
      if (ready?.status === "True") return;
      if (ready) last = `Ready=${ready.status} (${ready.reason ?? ""}: ${ready.message ?? ""})`;
    }
    if (Date.now() > deadline) throw new Error(`node ${name} was not Ready before the start timeout: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
