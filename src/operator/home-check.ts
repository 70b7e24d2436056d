/**
 * Whether a runtime home is usable, and a fix that fits: shared by `doctor` and `config check`.
 * Every hint is safe to paste: it only ever changes a directory that is already a runtime home
 * of its own (or nothing at all), never a shared one like /tmp or someone's home directory.
 */
import { lstatOrNull } from "../platform/lookup.ts";
import { PATH_MISSING, tolerating } from "../platform/errno.ts";
import { existsSync, lstatSync, readFileSync, readdirSync, realpathSync } from "node:fs";
import { HomeError, HomeSettingError, checkHome, creationProblem, defaultHome, isOwnHome, resolveHome, type HomeOptions } from "../store/home.ts";
import { inWords, type Check } from "./report.ts";
import { shellQuote } from "./common.ts";

const NAME = "runtime home";

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * This user's name for command lines (`install -o NAME`) from /etc/passwd, else the numeric
 * uid (install and chown take either). Not os.userInfo(): Bun's answers "unknown" for users
 * whose HOME/USER do not match.
 */
function userName(): string {
  const uid = process.getuid?.() ?? 0;
  // No /etc/passwd (macOS keeps users in Directory Services): the uid is exact anyway.
  const passwd = tolerating(PATH_MISSING, "", () => readFileSync("/etc/passwd", "utf8"));
  for (const line of passwd.split("\n")) {
    const [name, , id] = line.split(":");
    if (name && Number(id) === uid && /^[a-z_][\w.-]*$/i.test(name)) return name;
  }
  return String(uid);
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * A home of this user's own, in their state directory, as a command that makes it and the
 * flag that selects it; null when that is the home already being judged.
 */
function ownHomeAdvice(home: string): string | null {
  let own: string;
  try {
    own = defaultHome();
  } catch (error) {
    // A home setting of the environment that is no home (a relative path): nothing to advise.
    if (!(error instanceof HomeSettingError)) throw error;
    return null;
  }
  if (own === home) return null;
  const quoted = shellQuote(own);
  return `install -d -m 700 ${quoted}   # a home of your own; then --home ${quoted} (options.stateDirectory)`;
}

/** The check of the home `options` select; `home` is returned only when it is usable. */
export function checkRuntimeHome(options: HomeOptions): { check: Check; home: string | null } {
  let home: string;
  try {
    home = resolveHome(options);
  } catch (error) {
    return { check: { name: NAME, status: "fail", detail: message(error), hint: inWords("give an absolute --home DIR (options.stateDirectory), or make the variable absolute") }, home: null };
  }
  if (!existsSync(home) && !isSymlink(home)) return missingHome(home);
  try {
    checkHome(home);
  } catch (error) {
    if (!(error instanceof HomeError)) return { check: { name: NAME, status: "fail", detail: message(error) }, home: null };
    return { check: refused(home, error), home: null };
  }
  const stat = lstatSync(home);
  const detail = `${home} (mode ${(stat.mode & 0o777).toString(8)}, uid ${stat.uid})`;
  if (!isOwnHome(home)) {
    return {
      check: { name: NAME, status: "warn", detail: `${detail} also holds files that are not the runtime's: a home should be a directory of its own`, ...advice(ownHomeAdvice(home)) },
      home,
    };
  }
  return { check: { name: NAME, status: "ok", detail }, home };
}

function isSymlink(path: string): boolean {
  return lstatOrNull(path)?.isSymbolicLink() ?? false;
}

/** `hint` and `alternatives` from the fixes given, the first being the hint. */
function advice(...fixes: (string | null)[]): Pick<Check, "hint" | "alternatives"> {
  const [hint, ...alternatives] = fixes.filter((fix): fix is string => fix !== null);
  return { ...(hint === undefined ? {} : { hint }), ...(alternatives.length ? { alternatives } : {}) };
}

/** A home that does not exist yet: fine when it can be created, else why not and what to run. */
function missingHome(home: string): { check: Check; home: string | null } {
  const problem = creationProblem(home);
  if (problem === null) return { check: { name: NAME, status: "ok", detail: `${home} (not created yet; made with mode 700 on first use)` }, home };
  const own = ownHomeAdvice(home);
  if (problem.problem === "ancestor-not-directory") return { check: { name: NAME, status: "fail", detail: problem.message, ...advice(own) }, home: null };
  // Not writable: make it for this user (sudo), so it is not left owned by root.
  const quoted = shellQuote(home);
  const make = isRoot() ? null : `sudo install -d -m 700 -o ${shellQuote(userName())} ${quoted}`;
  return { check: { name: NAME, status: "fail", detail: problem.message, ...advice(make, own) }, home: null };
}

/** An existing home that checkHome refused. */
function refused(home: string, error: HomeError): Check {
  const quoted = shellQuote(home);
  const own = ownHomeAdvice(home);
  const check = (hints: Pick<Check, "hint" | "alternatives">, detail = error.message): Check => ({ name: NAME, status: "fail", detail, ...hints });
  switch (error.problem) {
    case "symlink": {
      // A dangling link, or a loop of them: there is no directory to point at.
      const target = tolerating([...PATH_MISSING, "ELOOP"], null, () => realpathSync(home));
      return check(advice(target === null ? null : `# give the directory itself: --home ${shellQuote(target)}`, own));
    }
    case "not-directory":
      return check(advice(own), `${error.message} (it is left alone)`);
    case "owner": {
      const uid = lstatSync(home).uid;
      // The usual cause: doctor run as another user than the daemon's.
      const asOwner = `sudo -u '#${uid}' ${shellQuote(process.execPath)} doctor --home ${quoted}   # check as the user who owns it (the daemon's?)`;
      const take = isOwnHome(home) && readdirSync(home).length === 0 ? `sudo chown ${shellQuote(userName())} ${quoted}` : null;
      return check(advice(asOwner, take, own));
    }
    case "mode": {
      const mode = (lstatSync(home).mode & 0o7777).toString(8);
      const detail = `runtime home ${home} is group- or world-writable (mode ${mode})`;
      if (isOwnHome(home)) return check(advice(`chmod 700 ${quoted}`), detail);
      return check(advice(own), `${detail} and not a directory of its own (shared, or it holds other files): its mode is not the runtime's to change`);
    }
    default:
      return check(advice(own));
  }
}
