// examples/templates/approval.yaml, the Approval a person writes by hand, with its <...> placeholders filled in as
// its comment tells them (and a check that none is left).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./control-plane.ts";

/** The template's path. */
export const APPROVAL_TEMPLATE = join(REPO_ROOT, "examples", "templates", "approval.yaml");

/** The template's text with `<run>`, `<prompt-id>` and `<reason>` replaced (comments kept); throws if a placeholder is left. */
export function fillApprovalTemplate(values: { run: string; promptId: string; reason: string }): string {
  const body = readFileSync(APPROVAL_TEMPLATE, "utf8").split("\n").filter((l) => !l.startsWith("#")).join("\n");
  const filled = body.replaceAll("<run>", values.run).replaceAll("<prompt-id>", values.promptId).replaceAll("<reason>", values.reason);
  const left = filled.match(/<[^>\n]*>/);
  if (left) throw new Error(`examples/templates/approval.yaml: placeholder ${left[0]} has no value`);
  return filled;
}
