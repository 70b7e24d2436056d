import { describe, expect, test } from "bun:test";
import { DEFAULT_OWNER, KNOWN_OPTIONS, readOptions, unknownOptions } from "../../src/options.ts";

describe("the options reader", () => {
  test("an empty map gives every default", () => {
    expect(readOptions({})).toEqual({
      owner: DEFAULT_OWNER,
      hostDirectory: "adopt",
      lifecycleEnvironment: {},
      exposeHostVisiblePath: true,
      stopTimeoutMs: 2000,
      logLevel: "info",
      logMaxBytes: 4 * 1024 * 1024,
      allowedGitProtocols: ["https", "ssh", "git", "file"],
      gitTimeoutMs: 600_000,
      containment: "auto",
      isolation: "none",
      network: "host",
      sandboxReadOnly: [],
      sandboxReadWrite: [],
    });
  });

  test("known values come through typed; keys the runtime does not read are dropped", () => {
    const options = readOptions({ owner: "o", stateDirectory: "/h", hostDirectory: "clone", helperPath: "/bin/h", stopTimeoutMs: 0, other: 1 });
    expect(options).toMatchObject({ owner: "o", stateDirectory: "/h", hostDirectory: "clone", helperPath: "/bin/h", stopTimeoutMs: 0 });
    expect(Object.hasOwn(options, "other")).toBe(false);
  });

  test("allowedGitProtocols keeps the operator's list once each, in order; an empty list allows no git URL", () => {
    expect(readOptions({ allowedGitProtocols: ["https", "http", "https"] }).allowedGitProtocols).toEqual(["https", "http"]);
    expect(readOptions({ allowedGitProtocols: [] }).allowedGitProtocols).toEqual([]);
    expect(readOptions({ gitTimeoutMs: 1 }).gitTimeoutMs).toBe(1);
  });

  test("lifecycleEnvironment keeps keys such as __proto__ as ordinary keys", () => {
    const options = readOptions(JSON.parse('{"lifecycleEnvironment":{"__proto__":"x","A":"1"}}'));
    expect(Object.keys(options.lifecycleEnvironment)).toEqual(["__proto__", "A"]);
    expect(Object.getPrototypeOf(options.lifecycleEnvironment)).toBe(Object.prototype);
  });

  test("containment options: the mode, the cgroup root, and limits in the cgroup files' own syntax", () => {
    const options = readOptions({ containment: "cgroup", cgroupRoot: "/sys/fs/cgroup/x", memoryMax: 1048576, pidsMax: "max", cpuMax: "50000 100000" });
    expect(options).toMatchObject({ containment: "cgroup", cgroupRoot: "/sys/fs/cgroup/x", memoryMax: "1048576", pidsMax: "max", cpuMax: "50000 100000" });
    expect(readOptions({ memoryMax: "512M", pidsMax: 64, cpuMax: "max" })).toMatchObject({ memoryMax: "512M", pidsMax: "64", cpuMax: "max" });
  });

  test.each([
    [{ containment: "docker" }, 'options.containment must be "auto", "cgroup" or "process-group", got "docker"'],
    [{ cgroupRoot: "sys/fs/cgroup" }, 'options.cgroupRoot must be an absolute path, got "sys/fs/cgroup"'],
    [{ memoryMax: "1Q" }, 'options.memoryMax must be "max" or a number of bytes, optionally with a K, M, G or T suffix (memory.max syntax), got "1Q"'],
    [{ memoryMax: -1 }, "options.memoryMax must be", ],
    [{ pidsMax: 0 }, 'options.pidsMax must be "max" or a positive number of processes (pids.max syntax), got 0'],
    [{ cpuMax: "10 100" }, 'options.cpuMax must be "max", "QUOTA" or "QUOTA PERIOD" in microseconds, quota ≥ 1000, period 1000–1000000 (cpu.max syntax), got "10 100"'],
    [{ cpuMax: "50000 2000000" }, "options.cpuMax must be"],
    [{ owner: "" }, 'options.owner must be a non-empty string without NUL, got ""'],
    [{ owner: 7 }, "options.owner must be a non-empty string without NUL, got 7"],
    [{ stateDirectory: "rel/dir" }, 'options.stateDirectory must be an absolute path, got "rel/dir"'],
    [{ stateDirectory: "/a\0b" }, 'options.stateDirectory must be an absolute path, got "/a\\u0000b"'],
    [{ hostDirectory: "copy" }, 'options.hostDirectory must be "adopt" or "clone", got "copy"'],
    [{ helperPath: "helper" }, 'options.helperPath must be an absolute path, got "helper"'],
    [{ exposeHostVisiblePath: "yes" }, 'options.exposeHostVisiblePath must be true or false, got "yes"'],
    [{ stopTimeoutMs: 1.5 }, "options.stopTimeoutMs must be an integer number of milliseconds between 0 and 3600000, got 1.5"],
    [{ stopTimeoutMs: -1 }, "options.stopTimeoutMs must be an integer number of milliseconds between 0 and 3600000, got -1"],
    [{ logLevel: "warn" }, 'options.logLevel must be "error", "info" or "debug", got "warn"'],
    [{ logMaxBytes: 1024 }, "options.logMaxBytes must be an integer number of bytes between 65536 and 1073741824, got 1024"],
    [{ allowedGitProtocols: "https" }, 'options.allowedGitProtocols must be a list of git transport names such as ["https", "ssh"], got "https"'],
    [{ allowedGitProtocols: ["HTTPS"] }, 'options.allowedGitProtocols must be a list of git transport names such as ["https", "ssh"], got "HTTPS"'],
    [{ allowedGitProtocols: ["https", "ext"] }, 'options.allowedGitProtocols must not contain "ext": that transport runs a command named in the URL'],
    [{ allowedGitProtocols: ["fd"] }, 'options.allowedGitProtocols must not contain "fd": that transport needs descriptors the runtime never passes, so git would wait forever'],
    [{ gitTimeoutMs: 0 }, "options.gitTimeoutMs must be an integer number of milliseconds between 1 and 86400000, got 0"],
    [{ isolation: "bwrap" }, 'options.isolation must be "none" or "sandbox", got "bwrap"'],
    [{ network: "off" }, 'options.network must be "host" or "none", got "off"'],
    [{ sandboxReadOnly: "/opt" }, 'options.sandboxReadOnly must be a list of absolute paths (normalized, without NUL), got "/opt"'],
    [{ sandboxReadOnly: ["opt"] }, 'options.sandboxReadOnly must be a list of absolute paths (normalized, without NUL), got "opt"'],
    [{ sandboxReadWrite: ["/srv/../etc"] }, 'options.sandboxReadWrite must be a list of absolute paths (normalized, without NUL), got "/srv/../etc"'],
    [{ sandboxReadWrite: ["/srv/"] }, 'options.sandboxReadWrite must be a list of absolute paths (normalized, without NUL), got "/srv/"'],
    [{ lifecycleEnvironment: [] }, "options.lifecycleEnvironment must be an object of strings, got []"],
    [{ lifecycleEnvironment: { A: 1 } }, 'options.lifecycleEnvironment value of "A" must be a string, got 1'],
    [{ lifecycleEnvironment: { "A=B": "1" } }, 'options.lifecycleEnvironment entry "A=B" is not a valid environment variable (empty name, "=" or NUL)'],
  ])("%j is refused: %s", (options, message) => {
    expect(() => readOptions(options as Record<string, unknown>)).toThrow(message);
  });

  test("unknown keys are named with the nearest known key, whatever their case", () => {
    expect(unknownOptions({ statedirectory: "/x", owner: "o", stopTimeout: 1, zzzzzzzz: true })).toEqual([
      { key: "statedirectory", nearest: "stateDirectory" },
      { key: "stopTimeout", nearest: "stopTimeoutMs" },
      { key: "zzzzzzzz", nearest: null },
    ]);
    expect(unknownOptions(Object.fromEntries(KNOWN_OPTIONS.map((key) => [key, 1])))).toEqual([]);
  });
});
