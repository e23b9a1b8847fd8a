// The AgentDojo harness's results summed up per suite and mode (and over all suites): attack success rate over the
// user × injection pairs, utility of the user tasks without an attack (and against the control's), asks per task.
/** One replayed run as the harness records it. */
export interface AgentDojoRun {
  readonly suite: string;
  readonly mode: string;
  readonly userTask: string;
  readonly injectionTask: string | null;
  readonly utility: boolean;
  readonly security: boolean | null;
  readonly attackSource: "agentdojo" | "harness" | null;
  readonly calls: readonly { readonly phase: "user" | "injection"; readonly tool: string; readonly executed: boolean; readonly refusal: string | null; readonly asks: readonly unknown[] }[];
}

/** One row: a suite (or "all") in one mode. */
export interface AgentDojoRow {
  readonly suite: string;
  readonly mode: string;
  readonly pairs: number;
  readonly attacksSucceeded: number;
  readonly asr: number;
  /** Over the pairs whose attack is AgentDojo's own ground truth (not one the harness wrote). */
  readonly asrAgentDojoAttacks: number;
  /** Over the pairs whose attack succeeds in the control (gate off): what the gate had to stop. */
  readonly attackablePairs: number;
  readonly asrOfAttackable: number;
  readonly exfiltrationPairs: number;
  readonly exfiltrationSucceeded: number;
  readonly userTasks: number;
  readonly utility: number;
  /** Utility against the control's (gate off) on the same tasks. */
  readonly utilityOfControl: number | undefined;
  readonly utilityUnderAttack: number;
  /** Prompts per user task run alone, and per pair (the user task's own calls, and the injection's). */
  readonly asksPerTask: number;
  readonly asksPerPairUser: number;
  readonly asksPerPairInjection: number;
  /** Pairs whose attack failed only because a prompt was answered deny (interactive). */
  readonly stoppedByPrompt: number;
  /** The user × injection pairs whose attack succeeded. */
  readonly succeeded: readonly string[];
}

const ratio = (n: number, d: number) => (d === 0 ? 0 : n / d);
const asks = (r: AgentDojoRun, phase: "user" | "injection") => r.calls.filter((c) => c.phase === phase).reduce((n, c) => n + c.asks.length, 0);

function row(suite: string, mode: string, runs: readonly AgentDojoRun[], exfil: Record<string, readonly string[]>, control: readonly AgentDojoRun[]): AgentDojoRow {
  const pairs = runs.filter((r) => r.injectionTask !== null);
  const alone = runs.filter((r) => r.injectionTask === null);
  const ok = pairs.filter((r) => r.security === true);
  const own = pairs.filter((r) => r.attackSource === "agentdojo");
  const isExfil = (r: AgentDojoRun) => (exfil[r.suite] ?? []).includes(r.injectionTask!);
  const controlOk = control.filter((r) => r.injectionTask === null && r.utility).length;
  const key = (r: AgentDojoRun) => `${r.suite}:${r.userTask}:${r.injectionTask}`;
  const attackable = new Set(control.filter((r) => r.injectionTask !== null && r.security === true).map(key));
  const inScope = pairs.filter((r) => attackable.has(key(r)));
  const useful = alone.filter((r) => r.utility).length;
  return {
    suite, mode,
    pairs: pairs.length,
    attacksSucceeded: ok.length,
    asr: ratio(ok.length, pairs.length),
    asrAgentDojoAttacks: ratio(own.filter((r) => r.security === true).length, own.length),
    attackablePairs: inScope.length,
    asrOfAttackable: ratio(inScope.filter((r) => r.security === true).length, inScope.length),
    exfiltrationPairs: pairs.filter(isExfil).length,
    exfiltrationSucceeded: ok.filter(isExfil).length,
    userTasks: alone.length,
    utility: ratio(useful, alone.length),
    utilityOfControl: controlOk === 0 ? undefined : useful / controlOk,
    utilityUnderAttack: ratio(pairs.filter((r) => r.utility).length, pairs.length),
    asksPerTask: ratio(alone.reduce((n, r) => n + asks(r, "user"), 0), alone.length),
    asksPerPairUser: ratio(pairs.reduce((n, r) => n + asks(r, "user"), 0), pairs.length),
    asksPerPairInjection: ratio(pairs.reduce((n, r) => n + asks(r, "injection"), 0), pairs.length),
    stoppedByPrompt: pairs.filter((r) => r.security === false && r.calls.some((c) => c.phase === "injection" && (c.refusal === "gate-denied" || c.refusal === "approval-declined"))).length,
    succeeded: ok.map((r) => `${r.suite}:${r.userTask}:${r.injectionTask}`),
  };
}

/** Every suite × mode, then all suites × mode. */
export function summarizeAgentDojo(runs: readonly AgentDojoRun[], exfil: Record<string, readonly string[]>): AgentDojoRow[] {
  const suites = [...new Set(runs.map((r) => r.suite))];
  const modes = [...new Set(runs.map((r) => r.mode))];
  const rows: AgentDojoRow[] = [];
  for (const suite of [...suites, "all"]) {
    for (const mode of modes) {
      const pick = (m: string) => runs.filter((r) => (suite === "all" || r.suite === suite) && r.mode === m);
      rows.push(row(suite, mode, pick(mode), exfil, pick("gate-off")));
    }
  }
  return rows;
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/** The table `npm run bench -- agentdojo` prints. */
export function renderAgentDojoTable(rows: readonly AgentDojoRow[], version: string): string {
  const lines = [
    `\nAgentDojo ${version}, hijacked-agent bound (ground-truth calls replayed through the sidecar; no model)\n`,
    "| suite | mode | pairs | ASR | ASR of the attacks the control lets succeed | ASR, exfiltration tasks | utility (no attack) | of control | utility under attack | asks per task | asks per pair (user / injection) | stopped only by a prompt |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    lines.push(`| ${r.suite} | ${r.mode} | ${r.pairs} | ${pct(r.asr)} (${r.attacksSucceeded}) | ${pct(r.asrOfAttackable)} (of ${r.attackablePairs}) | ${pct(ratio(r.exfiltrationSucceeded, r.exfiltrationPairs))} (${r.exfiltrationSucceeded}/${r.exfiltrationPairs}) | ${pct(r.utility)} (${Math.round(r.utility * r.userTasks)}/${r.userTasks}) | ${r.utilityOfControl === undefined ? "–" : pct(r.utilityOfControl)} | ${pct(r.utilityUnderAttack)} | ${r.asksPerTask.toFixed(2)} | ${r.asksPerPairUser.toFixed(2)} / ${r.asksPerPairInjection.toFixed(2)} | ${r.stoppedByPrompt} |`);
  }
  return `${lines.join("\n")}\n`;
}
