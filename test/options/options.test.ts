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
    [{ containment: "docker" }, 'options.containment must be "auto", "cgroup" or "process-group", got a string'],
    [{ cgroupRoot: "sys/fs/cgroup" }, 'options.cgroupRoot must be an absolute path, got a string'],
    [{ memoryMax: "1Q" }, 'options.memoryMax must be "max" or a number of bytes, optionally with a K, M, G or T suffix (memory.max syntax), got a string'],
    [{ memoryMax: -1 }, "options.memoryMax must be", ],
    [{ pidsMax: 0 }, 'options.pidsMax must be "max" or a positive number of processes (pids.max syntax), got a number'],
    [{ cpuMax: "10 100" }, 'options.cpuMax must be "max", "QUOTA" or "QUOTA PERIOD" in microseconds, quota ≥ 1000, period 1000–1000000 (cpu.max syntax), got a string'],
    [{ cpuMax: "50000 2000000" }, "options.cpuMax must be"],
    [{ owner: "" }, 'options.owner must be a non-empty string without NUL, got an empty string'],
    [{ owner: 7 }, "options.owner must be a non-empty string without NUL, got a number"],
    [{ stateDirectory: "rel/dir" }, 'options.stateDirectory must be an absolute path, got a string'],
    [{ stateDirectory: "/a\0b" }, 'options.stateDirectory must be an absolute path, got a string'],
    [{ hostDirectory: "copy" }, 'options.hostDirectory must be "adopt" or "clone", got a string'],
    [{ helperPath: "helper" }, 'options.helperPath must be an absolute path, got a string'],
    [{ exposeHostVisiblePath: "yes" }, 'options.exposeHostVisiblePath must be true or false, got a string'],
    [{ stopTimeoutMs: 1.5 }, "options.stopTimeoutMs must be an integer number of milliseconds between 0 and 3600000, got a number"],
    [{ stopTimeoutMs: -1 }, "options.stopTimeoutMs must be an integer number of milliseconds between 0 and 3600000, got a number"],
    [{ logLevel: "warn" }, 'options.logLevel must be "error", "info" or "debug", got a string'],
    [{ logMaxBytes: 1024 }, "options.logMaxBytes must be an integer number of bytes between 65536 and 1073741824, got a number"],
    [{ allowedGitProtocols: "https" }, 'options.allowedGitProtocols must be a list of git transport names such as ["https", "ssh"], got a string'],
    [{ allowedGitProtocols: ["HTTPS"] }, 'options.allowedGitProtocols must be a list of git transport names such as ["https", "ssh"], got a string'],
    [{ allowedGitProtocols: ["https", "ext"] }, 'options.allowedGitProtocols must not contain "ext": that transport runs a command named in the URL'],
    [{ allowedGitProtocols: ["fd"] }, 'options.allowedGitProtocols must not contain "fd": that transport needs descriptors the runtime never passes, so git would wait forever'],
    [{ gitTimeoutMs: 0 }, "options.gitTimeoutMs must be an integer number of milliseconds between 1 and 86400000, got a number"],
    [{ isolation: "bwrap" }, 'options.isolation must be "none" or "sandbox", got a string'],
    [{ network: "off" }, 'options.network must be "host", "none" or {"allow": ["api.example.com", "*.example.org", "10.0.0.5:5432"]}, got a string'],
    [{ network: { allow: ["ok.example", "http://bad.example/"] } }, 'options.network.allow entry 2 "http://bad.example/" is not an allow entry'],
    [{ sandboxReadOnly: "/opt" }, 'options.sandboxReadOnly must be a list of absolute paths (normalized, without NUL), got a string'],
    [{ sandboxReadOnly: ["opt"] }, 'options.sandboxReadOnly must be a list of absolute paths (normalized, without NUL), got a string'],
    [{ sandboxReadWrite: ["/srv/../etc"] }, 'options.sandboxReadWrite must be a list of absolute paths (normalized, without NUL), got a string'],
    [{ sandboxReadWrite: ["/srv/"] }, 'options.sandboxReadWrite must be a list of absolute paths (normalized, without NUL), got a string'],
    [{ lifecycleEnvironment: [] }, "options.lifecycleEnvironment must be an object of strings, got an array"],
    [{ lifecycleEnvironment: { A: 1 } }, 'options.lifecycleEnvironment value of "A" must be a string, got a number'],
    [{ lifecycleEnvironment: { "A=B": "1" } }, 'options.lifecycleEnvironment entry number 1 is not a valid environment variable (empty name, "=" or NUL)'],
  ])("%j is refused: %s", (options, message) => {
    expect(() => readOptions(options as Record<string, unknown>)).toThrow(message);
  });

  test.each([
    ["a list where a name goes", { owner: ["sk-live-4f9a8b7c6d5e"] }, "options.owner must be a non-empty string without NUL, got an array"],
    ["a token pasted as a path", { stateDirectory: "ghp_abcdefghijklmnop" }, "options.stateDirectory must be an absolute path, got a string"],
    ["a number where a string goes", { helperPath: 424242424242 }, "options.helperPath must be an absolute path, got a number"],
    ["a non-string env value", { lifecycleEnvironment: { TOKEN: { v: "ghp_abcdefghijklmnop" } } }, 'options.lifecycleEnvironment value of "TOKEN" must be a string, got an object'],
    ["NAME=secret pasted as an env name", { lifecycleEnvironment: { OK: "1", "TOKEN=ghp_abcdefghijklmnop": "x" } }, "options.lifecycleEnvironment entry number 2 is not a valid environment variable"],
    ["a picklist value", { logLevel: "ghp_abcdefghijklmnop" }, 'options.logLevel must be "error", "info" or "debug", got a string'],
    ["remote options that are not an object", { remote: "ghp_abcdefghijklmnop" }, "options.remote must be an object, got a string"],
  ])("an invalid option names the field, what it must be and the type that came, never the value: %s", (_what, options, message) => {
    let thrown: Error | null = null;
    try {
      readOptions(options as Record<string, unknown>);
    } catch (error) {
      thrown = error as Error;
    }
    expect(thrown?.message).toContain(message);
    for (const secret of ["sk-live-4f9a8b7c6d5e", "ghp_abcdefghijklmnop", "424242424242"]) expect(thrown?.message).not.toContain(secret);
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
