import { DescribeResponse, encodeFrame } from "../protocol/index.ts";
import { writeStdout } from "../output.ts";

/** What this binary really supports. Reconcile is advertised only once it works. */
export const CAPABILITIES: DescribeResponse = { protocolVersion: 1, modes: ["pipes", "pty"], reconcile: true };

/** `describe`: one canonical DescribeResponse line on stdout. */
export function describe(): number {
  writeStdout(encodeFrame(DescribeResponse, CAPABILITIES, "describe response"));
  return 0;
}
