import { describe, expect, it } from "vitest";
import { buildProbeNames, buildProbePod, buildProbePolicy, decideProbeVerdict, PROBE_LABEL, PROBE_ROLE_LABEL } from "./network-probe.ts";
import { DEFAULT_POD_SETTINGS } from "./pod-settings.ts";

describe("the network probe", () => {
  it("puts only its own closed client under the deny-all policy", () => {
    const policy = buildProbePolicy("abc", "probes");
    expect(policy.metadata).toMatchObject({ name: "leviath-netprobe-abc-deny", namespace: "probes" });
    expect(policy.spec).toEqual({ podSelector: { matchLabels: { [PROBE_LABEL]: "abc", [PROBE_ROLE_LABEL]: "closed" } }, policyTypes: ["Ingress", "Egress"] });
    const closed = buildProbePod({ id: "abc", namespace: "probes", role: "closed", settings: DEFAULT_POD_SETTINGS, target: "10.0.0.7", nodeName: "n1" });
    const open = buildProbePod({ id: "abc", namespace: "probes", role: "open", settings: DEFAULT_POD_SETTINGS, target: "10.0.0.7" });
    expect(closed.metadata.labels).toMatchObject({ [PROBE_LABEL]: "abc", [PROBE_ROLE_LABEL]: "closed" });
    expect(open.metadata.labels?.[PROBE_ROLE_LABEL]).toBe("open");
    expect(closed.metadata.name).toBe(buildProbeNames("abc").closed);
  });

  it("runs with the sandbox pods' restricted settings, the operator's image and no token", () => {
    const pod = buildProbePod({ id: "abc", namespace: "probes", role: "closed", settings: DEFAULT_POD_SETTINGS, target: "10.0.0.7", nodeName: "n1" });
    const spec = pod.spec as { automountServiceAccountToken: boolean; restartPolicy: string; nodeName: string; securityContext: Record<string, unknown>; containers: { image: string; env: unknown; securityContext: Record<string, unknown> }[] };
    expect(spec).toMatchObject({ automountServiceAccountToken: false, restartPolicy: "Never", nodeName: "n1" });
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(spec.containers[0]!.image).toBe(DEFAULT_POD_SETTINGS.sidecarImage);
    expect(spec.containers[0]!.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    expect(spec.containers[0]!.env).toEqual([{ name: "PROBE_TARGET", value: "10.0.0.7" }]);
  });

  it.each([
    ["connected", "refused", "Verified"],
    ["connected", "connected", "NotEnforced"],
    ["refused", "refused", "Unknown"],
    ["refused", "connected", "Unknown"],
    ["pending", "refused", "Unknown"],
    ["connected", "pending", "Unknown"],
  ] as const)("open %s, closed %s: %s", (open, closed, state) => {
    expect(decideProbeVerdict(open, closed).state).toBe(state);
  });
});
