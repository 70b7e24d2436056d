import { writeStdoutLean } from "../output.ts";
import { capabilitiesLine } from "../protocol/capabilities.ts" with { type: "macro" };

/** `describe`: one canonical DescribeResponse line on stdout (computed at build time). */
export async function describe(): Promise<number> {
  await writeStdoutLean(capabilitiesLine());
  return 0;
}
