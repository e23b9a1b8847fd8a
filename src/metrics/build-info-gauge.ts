import { Gauge, type Registry } from "./prom-core.ts";
import { getBuildInfo } from "../config/build-info.ts";

/** `<prefix>_build_info{version, node_version} 1`, the usual way to find which build a target runs. */
export function registerBuildInfo(registry: Registry, name: string, help: string): void {
  const info = getBuildInfo();
  const gauge = new Gauge({ name, help, labelNames: ["version", "node_version"], registers: [registry] });
  gauge.set({ version: info.version, node_version: info.nodeVersion }, 1);
}
