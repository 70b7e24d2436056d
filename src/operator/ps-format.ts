/**
 * `ps --format`: the field names and how a format is read. Apart from ps.ts, which renders each
 * field, because the command table checks `--format` at parse time and loads no command's code.
 */

/** Every `--format` field: the JSON keys, plus `age` and `memory` as people read them, and `host` (a remote runtime's; "-" here). */
export const FORMAT_FIELDS = ["workspaceId", "execId", "pid", "wrapperPid", "mode", "purpose", "state", "startedAt", "age", "processes", "memory", "memoryBytes", "pids", "cgroup", "argv0", "command", "host"] as const;
export type FormatField = (typeof FORMAT_FIELDS)[number];

function isField(name: string): name is FormatField {
  return (FORMAT_FIELDS as readonly string[]).includes(name);
}

/** How `ps` prints: a table of fields, or one line per execution from a template. */
export type Format = { kind: "table"; columns: [string, FormatField][] } | { kind: "template"; template: string };

/** A `--format` value: `{{.field}}` template (with \t and \n), or a comma-separated field list. Throws on an unknown field. */
export function parseFormat(value: string): Format {
  const unknown = (name: string) => new Error(`unknown field ${JSON.stringify(name)} (fields: ${FORMAT_FIELDS.join(", ")})`);
  if (value.includes("{{")) {
    for (const match of value.matchAll(/\{\{\s*\.?([\w-]+)\s*\}\}/g)) if (!isField(match[1]!)) throw unknown(match[1]!);
    return { kind: "template", template: value.replaceAll("\\t", "\t").replaceAll("\\n", "\n") };
  }
  const names = value.split(",").map((name) => name.trim());
  for (const name of names) if (!isField(name)) throw unknown(name);
  return { kind: "table", columns: (names as FormatField[]).map((name) => [name.replace(/([a-z])([A-Z])/g, "$1 $2").toUpperCase(), name]) };
}

/** `--format`'s check for the CLI (a usage error names the unknown field). */
export function formatProblem(value: string): string | null {
  try {
    parseFormat(value);
    return null;
  } catch (error) {
    return `has an ${(error as Error).message}`;
  }
}
