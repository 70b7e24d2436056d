/** How a daemon-side client runs this same binary: its argv and a clean environment. */

/** argv that runs this same program: the compiled binary, or bun + the entry script from source. */
export function selfCommand(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  return compiled ? [process.execPath] : [process.execPath, Bun.main];
}

/**
 * The environment for a child run of this binary: ours, minus what would make the embedded
 * Bun behave differently (BUN_OPTIONS can preload code, BUN_BE_BUN turns it into plain bun).
 */
export function selfEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && key !== "BUN_OPTIONS" && key !== "BUN_BE_BUN") env[key] = value;
  }
  return env;
}
