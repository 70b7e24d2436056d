/**
 * How a program's path is resolved (src/exec/program.ts): the shell's statuses, 127 for a path
 * that is not there, 126 for one that cannot be run or even reached, always as a ProgramError
 * (nothing launched, a caller trying several places goes on to the next).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProgramError, resolveProgram } from "../../src/exec/program.ts";
import { resolveHelper } from "../../src/exec/helper.ts";
import { tempDir } from "../../kit/scratch.ts";

const dir = tempDir("phr-program-");
afterAll(() => dir.cleanup());

function refusal(program: string): { code: number; message: string } | string {
  try {
    return resolveProgram(program, {}, dir.path);
  } catch (error) {
    if (!(error instanceof ProgramError)) throw error;
    return { code: error.code, message: error.message };
  }
}

describe("resolving a program's path", () => {
  test("missing: 127", () => {
    expect(refusal("./absent")).toEqual({ code: 127, message: 'program "./absent" not found' });
  });

  test("a symlink loop (ELOOP): 126, a refusal, not a crash", () => {
    symlinkSync("loop", join(dir.path, "loop"));
    expect(refusal("./loop")).toEqual({ code: 126, message: 'program "./loop" cannot be reached (ELOOP)' });
  });

  test("a file that is not executable: 126", () => {
    writeFileSync(join(dir.path, "plain"), "", { mode: 0o644 });
    expect(refusal("./plain")).toEqual({ code: 126, message: 'program "./plain" is not executable' });
  });
});

describe("the helper's search", () => {
  test("an options.helperPath that cannot be reached (a symlink loop) is passed by, said, and the search goes on", () => {
    const bin = join(dir.path, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "paseo-workspace-helper"), "#!/bin/sh\n", { mode: 0o755 });
    symlinkSync("helper-loop", join(dir.path, "helper-loop"));
    const helper = resolveHelper("paseo-workspace-helper", {}, dir.path, join(dir.path, "helper-loop"), bin);
    expect(helper).toEqual({ path: join(bin, "paseo-workspace-helper"), source: "host PATH", javascript: false });
  });
});
