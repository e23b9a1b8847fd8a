// One copy of each short string the controller's caches hold. JSON.parse makes a fresh string for every value of
// every watch event (V8 shares only property names and values of a few characters), so 10,000 cached objects each
// held their own "leviath.dev/v1alpha1", "leviath-operator", label values, condition reasons and messages, image
// names and their owner's name and uid: at 1,101 Runs a heap snapshot found 6.5 of the 51 MiB in use to be such
// copies (docs/benchmarks-history.md, "Controller memory at Node's default heap (issue 20, third pass)").

/** Longest string shared: longer values (start snapshots, specs) are rare and handled elsewhere (cached-fields.ts). */
const SHARED_MAX_LENGTH = 256;
/** Most distinct strings remembered; past it the pool starts over (a forgotten string stays valid where it is used). */
const SHARED_MAX_ENTRIES = 65_536;

/** Replaces each short string in an object (in place, recursively) by the pool's copy of it; `size` is how many it keeps. */
export interface StringPool {
  <T>(value: T): T;
  readonly size: number;
}

/**
 * A bounded pool of strings. Values unique to one object (uids, resource versions) pass through it too: a pool of
 * 65,536 holds them for a while and then starts over, so what it keeps alive beyond the caches is bounded, and the
 * strings many objects share are back in it after their next appearance.
 */
export function createStringPool(maxEntries = SHARED_MAX_ENTRIES, maxLength = SHARED_MAX_LENGTH): StringPool {
  let pool = new Map<string, string>();
  const share = (text: string): string => {
    if (text.length > maxLength) return text;
    const known = pool.get(text);
    if (known !== undefined) return known;
    if (pool.size >= maxEntries) pool = new Map();
    pool.set(text, text);
    return text;
  };
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return share(value);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = walk(value[i]);
    } else if (value !== null && typeof value === "object") {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) record[key] = walk(record[key]);
    }
    return value;
  };
  const apply = <T>(value: T): T => walk(value) as T;
  return Object.defineProperty(apply, "size", { get: () => pool.size }) as StringPool;
}
