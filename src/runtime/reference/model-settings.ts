// Which model a stage talks to and how, from the blueprint's `[stages.X.model]` (upstream's two forms) and the
// Run's override. Keys the runtime does not act on are reported, never dropped in silence.
import type { SamplingSettings } from "./providers/types.ts";

/** One provider/model pair, tried in order (upstream's failover list). */
export interface ModelChoice {
  readonly provider: string;
  readonly model: string;
}

/** A stage's resolved model settings. */
export interface ModelSettings {
  readonly models: readonly ModelChoice[];
  readonly sampling: SamplingSettings;
  /** `request_timeout_secs`, as milliseconds. */
  readonly timeoutMs?: number;
}

/** Upstream's default when a stage names no model (`lev validate` warns about it too). */
export const DEFAULT_MODEL: ModelChoice = { provider: "anthropic", model: "claude-sonnet-4-6" };

/** The `parameters` keys passed on to the provider; every other key is ignored with a warning. */
export const HONOURED_PARAMETERS = ["temperature", "top_p", "top_k", "max_tokens", "stop"] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function parseChoice(v: unknown, where: string, warnings: string[]): ModelChoice | undefined {
  if (isRecord(v) && typeof v["provider"] === "string" && v["provider"] !== "" && typeof v["model"] === "string" && v["model"] !== "") {
    return { provider: v["provider"], model: v["model"] };
  }
  warnings.push(`${where}: not a {provider, model} pair; ignored`);
  return undefined;
}

/** `provider/model` (the Run's `runtime.model` override, upstream's `--model`). */
export function parseModelOverride(text: string): ModelChoice | undefined {
  const slash = text.indexOf("/");
  return slash > 0 && slash < text.length - 1 ? { provider: text.slice(0, slash), model: text.slice(slash + 1) } : undefined;
}

function parseSampling(params: unknown, where: string, warnings: string[]): SamplingSettings {
  if (params === undefined) return {};
  if (!isRecord(params)) {
    warnings.push(`${where}: not a table; ignored`);
    return {};
  }
  const num = (key: string): number | undefined => {
    const v = params[key];
    if (v === undefined) return undefined;
    if (typeof v === "number" && Number.isFinite(v)) return v;
    warnings.push(`${where}.${key}: not a number; ignored`);
    return undefined;
  };
  const stopRaw = params["stop"];
  const stop = typeof stopRaw === "string" ? [stopRaw] : Array.isArray(stopRaw) && stopRaw.every((s) => typeof s === "string") ? stopRaw : undefined;
  if (stopRaw !== undefined && stop === undefined) warnings.push(`${where}.stop: not a string or a list of strings; ignored`);
  for (const key of Object.keys(params)) {
    if (!(HONOURED_PARAMETERS as readonly string[]).includes(key)) warnings.push(`${where}.${key}: not passed on by leviath agent (honoured: ${HONOURED_PARAMETERS.join(", ")})`);
  }
  const maxTokens = num("max_tokens");
  const out: { -readonly [K in keyof SamplingSettings]: SamplingSettings[K] } = {};
  const t = num("temperature");
  const p = num("top_p");
  const k = num("top_k");
  if (t !== undefined) out.temperature = t;
  if (p !== undefined) out.topP = p;
  if (k !== undefined) out.topK = k;
  if (maxTokens !== undefined) out.maxTokens = Math.max(1, Math.floor(maxTokens));
  if (stop !== undefined) out.stop = stop;
  return out;
}

/**
 * A stage's model settings. `model` is `{ models = [{provider, model}, ...] }` or the older
 * `{provider, model, fallbacks}`; `parameters` and `request_timeout_secs` are read; `allow_user_default` and
 * unknown keys are reported. `override` (the Run's `runtime.model`) replaces the list, keeping the parameters.
 */
export function resolveModelSettings(model: unknown, where: string, override: ModelChoice | undefined, warnings: string[]): ModelSettings {
  const read: ReadModel = { where, warnings, models: [], sampling: {}, timeoutMs: undefined };
  if (model !== undefined && !isRecord(model)) warnings.push(`${where}: not a table; the default model is used`);
  if (isRecord(model)) {
    for (const [key, value] of Object.entries(model)) {
      const readKey = Object.hasOwn(MODEL_KEYS, key) ? MODEL_KEYS[key] : undefined;
      if (readKey) readKey(value, read);
      else warnings.push(`${where}.${key}: ignored by leviath agent`);
    }
    if (model["provider"] !== undefined || model["model"] !== undefined) {
      const legacy = parseChoice({ provider: model["provider"], model: model["model"] }, where, warnings);
      if (legacy) read.models.unshift(legacy);
    }
  }
  const chosen = override ? [override] : read.models.length > 0 ? read.models : [DEFAULT_MODEL];
  return { models: chosen, sampling: read.sampling, ...(read.timeoutMs === undefined ? {} : { timeoutMs: read.timeoutMs }) };
}

/** What reading a stage's `model` table gathers, and where it reports what it ignores. */
interface ReadModel {
  readonly where: string;
  readonly warnings: string[];
  readonly models: ModelChoice[];
  sampling: SamplingSettings;
  timeoutMs: number | undefined;
}

/** How each known key of a `model` table is read (`provider` and `model`, the older form, are read after the loop). */
const MODEL_KEYS: Readonly<Record<string, (value: unknown, read: ReadModel) => void>> = {
  models(value, read) {
    if (!Array.isArray(value)) return void read.warnings.push(`${read.where}.models: not a list; ignored`);
    value.forEach((v, i) => { const c = parseChoice(v, `${read.where}.models[${i}]`, read.warnings); if (c) read.models.push(c); });
  },
  fallbacks(value, read) {
    if (!Array.isArray(value)) return void read.warnings.push(`${read.where}.fallbacks: not a list; ignored`);
    value.forEach((v, i) => { const c = typeof v === "string" ? parseModelOverride(v) : parseChoice(v, `${read.where}.fallbacks[${i}]`, read.warnings); if (c) read.models.push(c); });
  },
  parameters(value, read) {
    read.sampling = parseSampling(value, `${read.where}.parameters`, read.warnings);
  },
  request_timeout_secs(value, read) {
    if (typeof value === "number" && value > 0) read.timeoutMs = Math.round(value * 1000);
    else read.warnings.push(`${read.where}.request_timeout_secs: not a positive number; ignored`);
  },
  provider: () => undefined,
  model: () => undefined,
};
