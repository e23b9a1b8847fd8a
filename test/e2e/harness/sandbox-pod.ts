import type { V1Pod } from "@kubernetes/client-node";
import {
  buildContainerSecurityContext, buildPodSecurityContext, buildTmpVolume, DEFAULT_POD_SETTINGS,
} from "../../../src/sandbox/pod-settings.ts";
import { kubectl } from "../../integration/harness/kubectl.ts";
import { testCluster } from "../../integration/harness/test-cluster.ts";
import type { TestCluster } from "../../integration/harness/test-cluster.ts";
import { waitFor } from "../../integration/harness/wait-for.ts";

/** What {@link buildSandboxPod} varies; everything else is the operator's restricted sandbox settings. */
export type SandboxPodSpec = {
  name: string; namespace: string; image: string; labels?: Record<string, string>;
  /** PID 1 (default `sleep infinity`); the operator's own is SANDBOX_PID1 (src/sandbox/pods.ts). */
  command?: readonly string[];
};

/**
 * A sandbox pod as the operator makes one: the operator's own security contexts and resources
 * (src/sandbox/pod-settings.ts), a writable emptyDir `/tmp` on a read-only root, no service-account
 * token, `sleep infinity` (or the given PID 1), and `imagePullPolicy: Never` (the node's images are imported, never pulled).
 */
export function buildSandboxPod(spec: SandboxPodSpec): V1Pod {
  const settings = DEFAULT_POD_SETTINGS;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: spec.name, namespace: spec.namespace, labels: { "app.kubernetes.io/name": "leviath-e2e-sandbox", ...spec.labels } },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      securityContext: buildPodSecurityContext(settings.runAsUser),
      containers: [
        {
          name: "sandbox",
          image: spec.image,
          imagePullPolicy: "Never",
          command: [...(spec.command ?? ["sleep", "infinity"])],
          securityContext: buildContainerSecurityContext(),
          resources: settings.resources.sandbox,
          volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
        },
      ],
      volumes: [buildTmpVolume("tmp", settings.tmpSizeLimit)],
    },
  } as V1Pod;
}

/** Creates the pod and waits until its container runs; returns the pod as last read (uid, IP). */
export async function runPod(pod: V1Pod, cluster: TestCluster = testCluster(), timeoutMs = 90_000): Promise<V1Pod> {
  const { core } = cluster;
  const namespace = pod.metadata?.namespace ?? "default";
  const name = pod.metadata?.name ?? "";
  await core.createNamespacedPod({ namespace, body: pod });
  let last: V1Pod | undefined;
  try {
    return await waitFor(async () => {
      last = await core.readNamespacedPod({ name, namespace });
      if (last.status?.phase === "Failed" || last.status?.phase === "Succeeded") {
        throw new Error(`pod ${namespace}/${name} ended (${last.status.phase})`);
      }
      const running = last.status?.phase === "Running" && last.status.containerStatuses?.every((c) => c.ready && c.state?.running);
      return running ? last : undefined;
    }, { timeoutMs, intervalMs: 500, description: `pod ${namespace}/${name} to run` });
  } catch (error) {
    const events = await kubectl(["get", "events", "-n", namespace, "--field-selector", `involvedObject.name=${name}`], { allowFailure: true, cluster });
    const status = JSON.stringify(last?.status ?? {}, null, 1);
    throw new Error(`${error instanceof Error ? error.message : String(error)}\nstatus: ${status}\nevents:\n${events.stdout}${events.stderr}`, { cause: error });
  }
}

/** The result of a shell script run inside a pod's container through the API server and the kubelet. */
export type ExecResult = { exitCode: number; stdout: string; stderr: string };

/** Runs `sh -c script` in a pod's container (kubectl exec: API server → kubelet → containerd's stream server). */
export async function execInPod(namespace: string, name: string, script: string, container = "sandbox", cluster?: TestCluster): Promise<ExecResult> {
  const args = ["exec", "-n", namespace, name, "-c", container, "--", "sh", "-c", script];
  return kubectl(args, { allowFailure: true, timeoutMs: 30_000, ...(cluster ? { cluster } : {}) });
}
