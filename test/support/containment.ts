/** Which containment and isolation modes this host can test. */
import { missingTools } from "./tools.ts";

/**
 * The isolations a suite that holds under both runs with: always "none", and "sandbox" when
 * bwrap is installed (else the sandboxed half is skipped, saying why).
 */
export function isolations(what: string): ("none" | "sandbox")[] {
  return missingTools(`${what} under isolation "sandbox"`, ["bwrap"]).length === 0 ? ["none", "sandbox"] : ["none"];
}
