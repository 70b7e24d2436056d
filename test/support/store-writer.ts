/**
 * Holds a store's write lock for a while, as a slow writer of the same home would (for the
 * write-lock tests). Says "held" on stdout once it holds it, holds it for `ms`, and lets go.
 * - `transaction <home> <ms>`: a write transaction of the store, exactly as every operation
 *   takes it (src/store/db.ts writeTransaction).
 * - `lock <home> <ms> <stall-limit-ms>`: the writer lock alone, giving up after the stall limit.
 */
import { writeSync } from "node:fs";
import { openStore, storePath, writeTransaction } from "../../src/store/db.ts";
import { withWriterLock } from "../../src/store/writer-lock.ts";

const [mode, home, ms, limit] = process.argv.slice(2);
if (!home || !ms) throw new Error("usage: store-writer.ts transaction <home> <ms> | lock <home> <ms> <stall-limit-ms>");

function hold(): void {
  // Written at once (not through process.stdout, which would wait for the event loop).
  writeSync(1, "held\n");
  Bun.sleepSync(Number(ms));
}

if (mode === "transaction") {
  const store = openStore({ stateDirectory: home });
  writeTransaction(store.db, () => {
    store.db.run("UPDATE meta SET value = value WHERE key = 'schema_version'");
    hold();
  });
  store.db.close();
} else if (mode === "lock") {
  withWriterLock(storePath(home), hold, Number(limit));
} else throw new Error(`unknown mode ${mode}`);
