/** The envelope purposes `run --purpose` offers: data the command table lists, loaded by every call. */
import type { Purpose, SeedOf } from "../protocol/index.ts";

/** Purpose kinds `run --purpose` offers (run speaks the seed dialect); the ones needing more fields get fixed values. */
export const PURPOSES: Record<string, () => SeedOf<typeof Purpose>> = {
  terminal: () => ({ kind: "terminal", terminalId: `run-${process.pid}` }),
  "workspace-script": () => ({ kind: "workspace-script", script: "run" }),
  "workspace-helper": () => ({ kind: "workspace-helper" }),
  git: () => ({ kind: "git" }),
  setup: () => ({ kind: "setup" }),
  archive: () => ({ kind: "archive" }),
};
