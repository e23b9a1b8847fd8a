// Whether a blueprint's command seed may run (sandbox-and-blueprint §3.6): seed commands allowed by the policy
// (upstream's `allow_seed_commands`) and the command covered by `[safe_commands]`. Coverage is a prefix match on
// whole words, and a command holding any shell operator, expansion or line break is never covered: `git log; cat
// ~/.ssh/id_rsa` starts with `git log` but is not it. Fail closed: no prefixes, no commands.

/** Characters that make one command several, or let it expand into something else: never covered. */
const SHELL_OPERATORS = /[;&|<>`$(){}\n\r\\*?[\]~!#'"]/;

/** Why a command seed was refused, or that it may run. */
export type SeedCommandDecision =
  | { readonly ok: true; readonly prefix: string }
  | { readonly ok: false; readonly code: "seed-commands-disabled" | "seed-command-not-safe"; readonly message: string };

/** The settings a command seed is decided with (the run policy's `seedCommands`). */
export interface SeedCommandSettings {
  readonly allowed: boolean;
  readonly safeShell: readonly string[];
}

/** The prefix of `safeShell` that covers `command`, if any. */
export function findCoveringPrefix(command: string, safeShell: readonly string[]): string | undefined {
  const text = command.trim();
  if (text === "" || SHELL_OPERATORS.test(text)) return undefined;
  const words = text.split(/\s+/);
  return safeShell.find((p) => {
    const prefix = p.trim().split(/\s+/);
    return prefix.length > 0 && prefix[0] !== "" && prefix.length <= words.length && prefix.every((w, i) => words[i] === w);
  });
}

/** Decides one command seed of `region`. */
export function decideSeedCommand(region: string, command: string, settings: SeedCommandSettings): SeedCommandDecision {
  if (!settings.allowed) {
    return { ok: false, code: "seed-commands-disabled", message: `region '${region}': seed commands are disabled ([security] allow_seed_commands = false)` };
  }
  const prefix = findCoveringPrefix(command, settings.safeShell);
  if (prefix === undefined) {
    return { ok: false, code: "seed-command-not-safe", message: `region '${region}': seed command '${command}' is not covered by [safe_commands]; add it to the policy's safeCommands.shell, or drop the seed` };
  }
  return { ok: true, prefix };
}
