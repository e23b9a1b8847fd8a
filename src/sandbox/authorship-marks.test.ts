import { describe, expect, it } from "vitest";
import { APPROVAL_ANNOTATION, LABEL } from "../api/constants.ts";
import { formatCelList, OWNER_OPT_IN_LABELS, TRUSTED_ANNOTATIONS, TRUSTED_LABELS } from "./authorship-marks.ts";
import { ANNOTATION } from "./names.ts";

describe("the authorship marks", () => {
  it("classify every label the operator names: a mark, the managed-by label, or an owner's opt-in", () => {
    const classified = new Set([...TRUSTED_LABELS, ...OWNER_OPT_IN_LABELS, LABEL.managedBy]);
    expect(Object.values(LABEL).filter((l) => !classified.has(l))).toEqual([]);
    expect(TRUSTED_LABELS.filter((l) => OWNER_OPT_IN_LABELS.includes(l))).toEqual([]);
  });

  it("hold every annotation the operator writes and reads back", () => {
    const annotations = [...Object.values(ANNOTATION), ...Object.values(APPROVAL_ANNOTATION)];
    expect(annotations.filter((a) => !TRUSTED_ANNOTATIONS.includes(a))).toEqual([]);
  });

  it("are written into the policy as CEL list literals", () => {
    expect(formatCelList(["leviath.dev/run", "leviath.dev/pool"])).toBe("['leviath.dev/run', 'leviath.dev/pool']");
    expect(formatCelList([])).toBe("[]");
  });
});
