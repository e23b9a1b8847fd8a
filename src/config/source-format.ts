// Which syntax a settings file is written in, from what it holds: a `<(kubectl get ... -o yaml)` path or stdin has
// no extension to go by, and a LeviathPolicy is as welcome where config.toml is asked for as config.toml itself.
import { extname } from "node:path";

/** The two syntaxes the loaders read: our resources (YAML, JSON being YAML) and upstream's files (TOML). */
export type SourceFormat = "yaml" | "toml";

const YAML_EXTENSIONS = [".yaml", ".yml", ".json"];

/** What the first line that says anything is: a YAML mapping key, a TOML key or table, or neither. */
function formatOfLine(line: string): SourceFormat | null {
  if (line === "---" || line.startsWith("--- ") || line.startsWith("%") || line.startsWith("{") || line.startsWith("- ")) return "yaml";
  if (line.startsWith("[")) return "toml";
  // `key = value` (TOML) against `key: value` (YAML): whichever comes first after the key decides.
  const m = /^(?:[A-Za-z0-9_.-]+|"[^"]*"|'[^']*')\s*([=:])/.exec(line);
  if (m?.[1] === "=") return "toml";
  if (m?.[1] === ":") return "yaml";
  return null;
}

/**
 * The syntax of `text`, by its first line that is not blank or a comment; the extension (`.yaml`, `.yml`, `.json`
 * for YAML) only breaks a tie, and anything else without a telling line is upstream's TOML.
 */
export function detectSourceFormat(file: string, text: string): SourceFormat {
  for (const raw of text.replace(/^\uFEFF/, "").split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const format = formatOfLine(line);
    if (format !== null) return format;
    break;
  }
  return YAML_EXTENSIONS.includes(extname(file).toLowerCase()) ? "yaml" : "toml";
}
