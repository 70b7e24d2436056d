import { DescribeResponse, encodeFrame } from "./index.ts";

/** What this binary really supports. Reconcile is advertised only once it works. */
const CAPABILITIES: DescribeResponse = { protocolVersion: 1, modes: ["pipes", "pty"], reconcile: true };

/**
 * The canonical `describe` line, validated against the schema. src/protocol-ops/describe.ts
 * imports it as a Bun macro: it runs when the binary is bundled, so `describe` writes a constant
 * and loads neither valibot nor the protocol's schemas at run time.
 */
export function capabilitiesLine(): string {
  return encodeFrame(DescribeResponse, CAPABILITIES, "describe response");
}
