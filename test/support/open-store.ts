/**
 * A child process of test/lifecycle/store.test.ts: at the epoch millisecond argv[3] (so that
 * its siblings start together), opens (and so creates, on first use) the database at argv[2]
 * the way every operation does, then closes it. Prints "ok", or the error.
 */
import { openDatabase } from "../../src/store/db.ts";

const startAt = Number(process.argv[3]);
while (Date.now() < startAt) Bun.sleepSync(0.2);
try {
  openDatabase(process.argv[2]!).close();
  console.log("ok");
} catch (error) {
  console.log((error as Error).message);
}
