/**
 * A keyed digest of a create input, so a re-create can be compared with the input that made
 * the workspace without that input being stored in clear (a git URL may carry a token). The key
 * is 32 random bytes in `<home>/input.key`, mode 0600, made once per home.
 * Bun's own hasher and the global Web Crypto, not `node:crypto`: that module (and the stream
 * machinery it pulls in) costs ~5–7 ms at the start of every process of the compiled binary.
 */
import { closeSync, constants, fstatSync, fsyncSync, linkSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { homeEntry, homeTemporary } from "./home.ts";
import { hasErrno, tolerating } from "../platform/errno.ts";

const KEY_BYTES = 32;

const keys = new Map<string, Buffer>();

/** HMAC-SHA-256 (hex) of a create input's JSON text under the home's key. */
export function digestInputText(home: string, json: string): string {
  return new Bun.CryptoHasher("sha256", homeKey(home)).update(json).digest("hex");
}

/** The digest of a create input (its canonical JSON, as validated). */
export function digestInput(home: string, input: unknown): string {
  return digestInputText(home, JSON.stringify(input));
}

/** True when two digests are equal (compared in constant time). */
export function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && left.length > 0 && crypto.timingSafeEqual(left, right);
}

function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}

/** The home's key, made on first use. */
function homeKey(home: string): Buffer {
  const known = keys.get(home);
  if (known) return known;
  const path = homeEntry(home, "inputKey");
  const key = readKey(path) ?? makeKey(home, path);
  keys.set(home, key);
  return key;
}

/**
 * Writes a fresh key beside its final name and links it into place: a concurrent process
 * either wins the link or reads the winner's complete file; nobody ever reads half a key.
 */
function makeKey(home: string, path: string): Buffer {
  const temp = homeTemporary(home, "inputKey", `${process.pid}.${Buffer.from(randomBytes(6)).toString("hex")}`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, randomBytes(KEY_BYTES));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    tolerating(["EEXIST"], undefined, () => linkSync(temp, path));
  } finally {
    unlinkSync(temp);
  }
  const key = readKey(path);
  if (!key) throw new Error(`${path} vanished right after it was made`);
  return key;
}

/** The key at `path`, or null when there is none; refuses a file anyone else could read or have written. */
function readKey(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if (hasErrno(error, ["ENOENT"])) return null;
    throw new Error(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    const stat = fstatSync(fd);
    const uid = process.getuid?.();
    if (!stat.isFile() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o077) !== 0 || stat.size !== KEY_BYTES) {
      throw new Error(`${path} is not a ${KEY_BYTES}-byte file of this user with mode 0600; refusing to use it (remove it only if no workspace of this home is in use)`);
    }
    const key = Buffer.alloc(KEY_BYTES);
    if (readSync(fd, key, 0, KEY_BYTES, 0) !== KEY_BYTES) throw new Error(`${path} could not be read whole`);
    return key;
  } finally {
    closeSync(fd);
  }
}
