// The CEL library bound statically, for the CLI, the controller's admission, tests and benches. The sidecar does
// not import this module: it loads the library only for a policy that has rules (sidecar/core/enforcement.ts).
import * as cel from "@bufbuild/cel";
import { compileRulesWith, type CompiledRuleSet, type RuleSource } from "./cel-rules.ts";

/** Compiles rules once, sorted by name. */
export function compileRules(sources: readonly RuleSource[]): CompiledRuleSet {
  return compileRulesWith(cel, sources);
}
