// In a cluster, the sidecar owns part of its Run's status (field manager `leviath-sidecar`): the stage, the
// taint, the decision counts by source, the pending approvals (at most 32), its MCP servers and what the
// runtime said it does not honour (at most 32 lines). Written by
// server-side apply on the status subresource, only when it changed. Never the result: that is applied once per
// accepted submit_output under its own field manager (cluster-records.ts), so this write, which a restarted sidecar
// starts from nothing, cannot drop it.
import { API_VERSION, KIND, SIDECAR_FIELD_MANAGER } from "../../api/constants.ts";
import type { KubeClient } from "../../kube/client.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { Logger } from "../../log/logger.ts";
import type { RunStatusSnapshot } from "../core/status-snapshot.ts";

/** The status fields the sidecar owns, from a snapshot. */
export function buildRunStatusPatch(snap: RunStatusSnapshot): Record<string, unknown> {
  return {
    stage: snap.stage.name,
    taint: { tracking: snap.taint.tracking, level: snap.taint.level },
    gateDecisions: snap.gateDecisions,
    pendingApprovals: snap.pendingApprovals.map((a) => ({
      id: a.id, kind: a.kind, tool: a.tool, ...(a.target === undefined ? {} : { target: a.target }), stage: a.stage, prompt: a.prompt.slice(0, 4096), raisedAt: a.raisedAt,
    })),
    ...(snap.runtimeWarnings !== undefined ? { runtimeWarnings: [...snap.runtimeWarnings] } : {}),
    ...(snap.policyFlips !== undefined ? { policyFlips: { ...snap.policyFlips } } : {}),
    ...(snap.mcpServers !== undefined ? { mcpServers: snap.mcpServers.map((m) => ({ name: m.name, offered: m.offered, tools: m.tools, ...(m.message === undefined ? {} : { message: m.message.slice(0, 1024) }) })) } : {}),
  };
}

/** Options of {@link startRunStatusReporter}. */
export interface RunStatusReporterOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  readonly status: () => RunStatusSnapshot;
  readonly log: Logger;
  readonly intervalMs?: number;
}

/** Applies the sidecar's part of the Run's status now (when it changed since the last write). */
export function createRunStatusReporter(opts: RunStatusReporterOptions): { report(): Promise<boolean> } {
  let last = "";
  return {
    async report() {
      const status = buildRunStatusPatch(opts.status());
      const text = JSON.stringify(status);
      if (text === last) return false;
      const body = { apiVersion: API_VERSION, kind: KIND.run, metadata: { name: opts.run, namespace: opts.namespace }, status };
      await opts.client.request("PATCH", buildPath(RESOURCES.run, opts.namespace, opts.run, "status"), {
        query: { fieldManager: SIDECAR_FIELD_MANAGER, force: true },
        body,
        contentType: "application/apply-patch+yaml",
      });
      last = text;
      return true;
    },
  };
}

/** Reports every `intervalMs` until stopped; failures are logged and retried. */
export function startRunStatusReporter(opts: RunStatusReporterOptions): { stop(): Promise<void> } {
  const reporter = createRunStatusReporter(opts);
  const tick = () => reporter.report().catch((err: unknown) => opts.log.warn({ err: (err as Error).message }, "Run status update failed; retrying"));
  const timer = setInterval(() => void tick(), opts.intervalMs ?? 2000);
  timer.unref();
  void tick();
  return {
    async stop() {
      clearInterval(timer);
      await tick();
    },
  };
}
