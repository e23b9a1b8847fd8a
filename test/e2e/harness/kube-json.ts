import { kubectl } from "../../integration/harness/index.ts";

/** `kubectl <args> -o json`, parsed. */
export async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse((await kubectl([...args, "-o", "json"])).stdout) as T;
}

/** An image reference as the chart's `{repository, tag}` values. */
export function imageValues(ref: string): { repository: string; tag: string } {
  const at = ref.lastIndexOf(":");
  return { repository: ref.slice(0, at), tag: ref.slice(at + 1) };
}
