import { capabilitiesLine } from "../protocol/capabilities.ts" with { type: "macro" };

/**
 * `describe`: one canonical DescribeResponse line on stdout (computed at build time). Bun's own
 * writer, so the call loads neither `node:fs` (~2 ms) nor anything else; this process shares its
 * stdout with no workload, and this path never sets O_NONBLOCK (platform notes).
 */
export async function describe(): Promise<number> {
  await Bun.write(Bun.stdout, capabilitiesLine());
  return 0;
}
