// The run policy in force, and its hot reload: the source is polled, and when its bytes change, and stay the same
// for one more poll, it is loaded and compiled again. New decisions use a new policy at once; one that fails to
// load or compile never replaces the last good one, and the failure is logged and counted until a good one arrives.
// The extra poll is for a file rewritten in place (an editor, `cat >`): between its truncation and its new bytes it
// is empty or a prefix, which may parse, and a prefix can lack a deny the whole file has.
import { buildEnforcement, type Enforcement, type EnforcementContext } from "./enforcement.ts";
import type { PolicySource } from "../cluster/policy-sources.ts";

/** What a holder reports. */
export interface PolicyHolderHooks {
  loaded(enf: Enforcement, warnings: readonly string[], initial: boolean): void;
  failed(error: string): void;
}

/** A load attempt's outcome; `settling`: the source changed since the last poll, and is loaded once it holds still. */
export type ReloadResult = "unchanged" | "settling" | "reloaded" | "failed";

/** A holder's first policy, loaded. */
interface Opened {
  readonly source: PolicySource;
  readonly ctx: EnforcementContext;
  readonly hooks: PolicyHolderHooks;
  readonly current: Enforcement;
  readonly fingerprint: string;
}

/** The current enforcement, reloaded from its source when the source changes. */
export class PolicyHolder {
  readonly #source: PolicySource;
  readonly #ctx: EnforcementContext;
  readonly #hooks: PolicyHolderHooks;
  readonly #listeners: ((enf: Enforcement) => void)[] = [];
  #current: Enforcement;
  #fingerprint: string;
  /** A changed fingerprint seen by the last poll, not loaded yet. */
  #settling: string | undefined;
  #lastError: string | undefined;
  #timer: NodeJS.Timeout | undefined;

  private constructor(opened: Opened) {
    this.#source = opened.source;
    this.#ctx = opened.ctx;
    this.#hooks = opened.hooks;
    this.#current = opened.current;
    this.#fingerprint = opened.fingerprint;
  }

  /** Loads the first policy; failing here is failing to start, with the error naming the entry. */
  static open(source: PolicySource, ctx: EnforcementContext, hooks: PolicyHolderHooks): { ok: true; holder: PolicyHolder } | { ok: false; error: string } {
    const fingerprint = source.fingerprint();
    const built = PolicyHolder.#build(source, ctx);
    if (!built.ok) return built;
    const holder = new PolicyHolder({ source, ctx, hooks, current: built.value, fingerprint });
    hooks.loaded(built.value, built.warnings, true);
    return { ok: true, holder };
  }

  /** Has `listener` hear every policy a reload puts in force, after the hooks (a part built on the holder follows it). */
  onReload(listener: (enf: Enforcement) => void): void {
    this.#listeners.push(listener);
  }

  static #build(source: PolicySource, ctx: EnforcementContext): { ok: true; value: Enforcement; warnings: string[] } | { ok: false; error: string } {
    const loaded = source.load();
    if (!loaded.ok) return loaded;
    const enf = buildEnforcement(loaded.value, ctx);
    if (!enf.ok) return { ok: false, error: `${source.description}: ${enf.error}` };
    return { ok: true, value: enf.value, warnings: [...loaded.warnings, ...enf.value.warnings] };
  }

  /** The policy in force. */
  current(): Enforcement {
    return this.#current;
  }

  /** The error of the last failed load, while the last good policy is still in force. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /**
   * Reloads when the source changed: at once when asked (`settle: false`, a source replaced whole), or once two
   * polls in a row saw the same changed bytes (`settle: true`, what {@link watch} does).
   */
  check({ settle }: { settle: boolean } = { settle: false }): ReloadResult {
    const fingerprint = this.#source.fingerprint();
    if (fingerprint === this.#fingerprint) {
      this.#settling = undefined;
      return "unchanged";
    }
    if (settle && fingerprint !== this.#settling) {
      this.#settling = fingerprint;
      return "settling";
    }
    this.#settling = undefined;
    this.#fingerprint = fingerprint;
    const built = PolicyHolder.#build(this.#source, this.#ctx);
    if (!built.ok) {
      this.#lastError = built.error;
      this.#hooks.failed(built.error);
      return "failed";
    }
    this.#current = built.value;
    this.#lastError = undefined;
    this.#hooks.loaded(built.value, built.warnings, false);
    for (const listener of this.#listeners) listener(built.value);
    return "reloaded";
  }

  /** Polls the source every `intervalMs`; a change is loaded on the poll after the one that saw it, if still the same. */
  watch(intervalMs: number): void {
    this.stop();
    this.#timer = setInterval(() => this.check({ settle: true }), intervalMs);
    this.#timer.unref();
  }

  /** Stops polling. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
