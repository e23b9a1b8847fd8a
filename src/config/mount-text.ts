// Upstream writes a mount as one string, Docker-style: `/opt/toolchain` or `/opt/toolchain:ro`.

/** A mount string split into its path and, when a `:ro`/`:rw` suffix says so, whether it is read-only. */
export interface MountText {
  path: string;
  readOnly?: boolean;
}

const MODES: Record<string, boolean> = { ro: true, rw: false };

/** Split `path[:ro|:rw]`; any other text after the last `:` stays part of the path (the schema judges it). */
export function parseMountText(text: string): MountText {
  const colon = text.lastIndexOf(":");
  const suffix = text.slice(colon + 1);
  const mode = colon > 0 && Object.hasOwn(MODES, suffix) ? MODES[suffix] : undefined;
  return mode === undefined ? { path: text } : { path: text.slice(0, colon), readOnly: mode };
}
