// The node flags that give `leviath controller` the heap it has in the chart's pod: the chart's
// `controller.nodeOptions`, and the old space V8 sizes from the container's 512Mi memory limit (256 MiB; on a
// machine without that limit V8 would size it from all of the machine's memory). The benches run the controller
// with these unless told otherwise, as they run the sidecar with its container's memory environment.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { ROOT } from "./bench-results.ts";

/** The old space V8 gives itself under the chart's default 512Mi limit, in MiB. */
const CHART_LIMIT_OLD_SPACE_MIB = 256;

/** The chart's controller NODE_OPTIONS, plus the old space its memory limit gives V8. */
export function readChartControllerNodeArgs(): string[] {
  const values = parse(readFileSync(join(ROOT, "charts/leviath-operator/values.yaml"), "utf8")) as { controller?: { nodeOptions?: string } };
  const chart = (values.controller?.nodeOptions ?? "").split(" ").filter(Boolean);
  const oldSpace = chart.some((a) => a.startsWith("--max-old-space-size")) ? [] : [`--max-old-space-size=${CHART_LIMIT_OLD_SPACE_MIB}`];
  return [...oldSpace, ...chart];
}
