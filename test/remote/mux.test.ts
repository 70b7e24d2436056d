/** The pieces of `--remote` that need no sshd: the multiplex, its credit, URLs, ssh command lines, hashing. */
import { describe, expect, test } from "bun:test";
import { Channel, MAX_DATA, MUX_WINDOW, MuxDecoder, MuxError, MuxType, ReceiveWindow, SendCredit, creditOf, encodeCredit, encodeMux } from "../../src/remote/mux.ts";
import { remoteContext } from "../../src/remote/context.ts";
import { hashPlacement } from "../../src/remote/placement.ts";
import { sshArgv, type SshSettings } from "../../src/remote/ssh.ts";
import { posixQuote } from "../../src/shell-quote.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { isShareableUrl } from "../../src/remote/wire.ts";

describe("mux framing", () => {
  const frames = [
    encodeMux(MuxType.HELLO, 0, '{"mux":1,"version":"x"}'),
    encodeMux(MuxType.DATA, Channel.STDOUT, new Uint8Array([0, 255, 10, 13])),
    encodeMux(MuxType.DATA, Channel.EVENTS, '{"type":"started","protocolVersion":1}\n'),
    encodeMux(MuxType.EOF, Channel.STDERR),
    encodeCredit(Channel.STDIN, 65_536),
    encodeMux(MuxType.EXIT, 0, '{"code":0,"signal":null}'),
  ];
  const stream = Buffer.concat(frames);

  test("a stream split at every possible point decodes to the same frames", () => {
    const whole = new MuxDecoder("toLocal").push(stream);
    expect(whole.map((f) => f.type)).toEqual([MuxType.HELLO, MuxType.DATA, MuxType.DATA, MuxType.EOF, MuxType.CREDIT, MuxType.EXIT]);
    expect([...whole[1]!.payload]).toEqual([0, 255, 10, 13]);
    expect(creditOf(whole[4]!)).toBe(65_536);
    for (let cut = 0; cut <= stream.length; cut++) {
      const decoder = new MuxDecoder("toLocal");
      const parts = [...decoder.push(stream.subarray(0, cut)), ...decoder.push(stream.subarray(cut))];
      expect(parts).toEqual(whole);
      expect(decoder.pendingBytes).toBe(0);
    }
    const byteByByte = new MuxDecoder("toLocal");
    expect([...stream].flatMap((byte) => byteByByte.push(new Uint8Array([byte])))).toEqual(whole);
  });

  test("a cut frame is pending bytes, which the reader reports at EOF", () => {
    const decoder = new MuxDecoder("toLocal");
    expect(decoder.push(stream.subarray(0, 8))).toEqual([]);
    expect(decoder.pendingBytes).toBe(8);
  });

  test.each([
    ["an unknown type", encodeMux(10 as MuxType, 0), "type 10 (unknown) is not allowed"],
    ["a frame only the other side sends", encodeMux(MuxType.OPEN, 0, "{}"), "OPEN) is not allowed in this direction"],
    ["DATA on the wrong channel", encodeMux(MuxType.DATA, Channel.STDIN, "x"), "DATA frame on channel 0"],
    ["an oversized DATA frame", Buffer.from([MuxType.DATA, 1, 0, 1, 0, 1]), `larger than ${MAX_DATA}`],
  ])("%s is a protocol error, and the decoder stays failed", (_what, bytes, message) => {
    const decoder = new MuxDecoder("toLocal");
    expect(() => decoder.push(bytes)).toThrow(message);
    expect(() => decoder.push(frames[0]!)).toThrow(message);
  });

  test("good frames before a broken one in the same chunk come with the error (a greeting, then garbage)", () => {
    const decoder = new MuxDecoder("toLocal");
    const chunk = Buffer.concat([frames[0]!, encodeMux(MuxType.PING, 0), Buffer.from("garbage after the greeting")]);
    const error = (() => {
      try {
        decoder.push(chunk);
      } catch (caught) {
        return caught as MuxError;
      }
      throw new Error("accepted garbage");
    })();
    expect(error).toBeInstanceOf(MuxError);
    expect(error.message).toBe("mux frame of type 103 (unknown) is not allowed in this direction");
    expect(error.before.map((frame) => frame.type)).toEqual([MuxType.HELLO, MuxType.PING]);
    expect(() => decoder.push(frames[0]!)).toThrow("type 103");
  });

  test("the remote direction accepts what the local side sends", () => {
    const sent = [encodeMux(MuxType.OPEN, 0, "{}\n"), encodeMux(MuxType.DATA, Channel.STDIN, "in"), encodeMux(MuxType.DATA, Channel.CONTROLS, "c"), encodeMux(MuxType.SIGNAL, 0, "SIGTERM"), encodeCredit(Channel.STDOUT, 1)];
    expect(new MuxDecoder("toRemote").push(Buffer.concat(sent)).length).toBe(5);
    expect(() => new MuxDecoder("toRemote").push(encodeMux(MuxType.DATA, Channel.STDOUT, "x"))).toThrow("channel 1");
  });
});

describe("credit", () => {
  test("a sender never has more than one window outstanding, and resumes on credit", async () => {
    const credit = new SendCredit();
    let sent = 0;
    while (credit.available > 0) sent += credit.take(MAX_DATA * 3);
    expect(sent).toBe(MUX_WINDOW);
    expect(credit.take(1)).toBe(0);
    let resumed = false;
    const waiting = credit.wait().then(() => (resumed = true));
    await Bun.sleep(5);
    expect(resumed).toBe(false);
    credit.grant(100);
    await waiting;
    expect(credit.take(1000)).toBe(100);
  });

  test("credit for bytes never sent is a protocol error; so is a sender overrunning the window", () => {
    const credit = new SendCredit();
    credit.take(10);
    expect(() => credit.grant(11)).toThrow("exceeds the 10 outstanding");
    const window = new ReceiveWindow();
    window.arrived(MUX_WINDOW, "ch1");
    expect(() => window.arrived(1, "ch1")).toThrow("more than its");
    window.written(MUX_WINDOW);
  });
});

describe("ssh URLs", () => {
  test("the parts, the host key, the program path", () => {
    expect(parseSshUrl("ssh://buildbox")).toEqual({ user: null, host: "buildbox", port: null, binary: "paseo-host-runtime", key: "buildbox" });
    expect(parseSshUrl("ssh://ci@10.0.0.5:2222/opt/paseo/bin/paseo-host-runtime")).toEqual({
      user: "ci",
      host: "10.0.0.5",
      port: 2222,
      binary: "/opt/paseo/bin/paseo-host-runtime",
      key: "ci@10.0.0.5:2222",
    });
    expect(parseSshUrl("ssh://root@[::1]:22").key).toBe("root@[::1]:22");
  });

  test("nothing that ssh or a shell could read as an option or syntax gets through", () => {
    for (const bad of ["ssh://-oProxyCommand=x", "ssh://a@-b", "ssh://-a@b", "ssh://h;id", "ssh://h/x y", "ssh://h/$(id)", "ssh://u:p@h", "ssh://h:99999", "ssh://[zz]"]) {
      expect(() => parseSshUrl(bad), bad).toThrow();
    }
  });
});

describe("ssh command lines", () => {
  const settings: SshSettings = { configFile: "/etc/x.conf", controlDir: "/h/ssh", controlPersistSeconds: 60, connectTimeoutSeconds: 10, serverAliveIntervalSeconds: 15, idleTimeoutSeconds: 60 };

  test("batch mode, no forwarding, the destination after --, and every remote word quoted for sh", () => {
    const argv = sshArgv(parseSshUrl("ssh://u@h:2200/opt/p"), settings, ["/opt/p", "inspect", "--workspace-id", "it's; rm -rf /"]);
    expect(argv.slice(-3)).toEqual(["--", "h", "/opt/p inspect --workspace-id 'it'\\''s; rm -rf /'"]);
    expect(argv.slice(argv.indexOf("-p"), argv.indexOf("-p") + 4)).toEqual(["-p", "2200", "-l", "u"]);
    for (const option of ["BatchMode=yes", "ClearAllForwardings=yes", "ForwardAgent=no", "ForwardX11=no", "RequestTTY=no", "ControlMaster=auto", "ControlPersist=60"]) expect(argv).toContain(option);
    expect(argv).toContain("-F");
    const controlPath = argv.find((word) => word.startsWith("ControlPath="))!;
    expect(controlPath).toMatch(/^ControlPath=\/h\/ssh\/[0-9a-f]{16}$/);
    const noReuse = sshArgv(parseSshUrl("ssh://h"), { ...settings, controlDir: null }, ["x"]);
    expect(noReuse).toContain("ControlPath=none");
  });

  test("a quoted word reaches the program unchanged through /bin/sh", () => {
    for (const word of ["plain", "", "a b", "it's", '"$HOME"', "`id`", "\\n", "λ", "-rf", "*", "~"]) {
      const result = Bun.spawnSync(["/bin/sh", "-c", `printf %s ${posixQuote(word)}`], { stdout: "pipe" });
      expect(result.stdout.toString(), word).toBe(word);
    }
  });
});

describe("placement by hash", () => {
  const hosts = ["ssh://a", "ssh://b", "ssh://c"].map(parseSshUrl);

  test("does not depend on the order of the host list, and spreads workspaces", () => {
    const reversed = [...hosts].reverse();
    const counts = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const host = hashPlacement(hosts, `w${i}`);
      expect(hashPlacement(reversed, `w${i}`).key).toBe(host.key);
      counts.set(host.key, (counts.get(host.key) ?? 0) + 1);
    }
    for (const host of hosts) expect(counts.get(host.key)!).toBeGreaterThan(50);
  });

  test("adding a host moves only the workspaces the new host wins", () => {
    const more = [...hosts, parseSshUrl("ssh://d")];
    for (let i = 0; i < 300; i++) {
      const after = hashPlacement(more, `w${i}`).key;
      if (after !== "d") expect(after).toBe(hashPlacement(hosts, `w${i}`).key);
    }
  });
});

describe("the options the remote side gets", () => {
  test("no local paths, no remote settings, never hostVisiblePath; remote home, owner and helper from options.remote", () => {
    const raw = JSON.parse(
      '{"owner":"o","stateDirectory":"/local","helperPath":"/local/h","hostDirectory":"clone","stopTimeoutMs":5,"__proto__":{"x":1},"remote":{"stateDirectory":"/r","helperPath":"/r/h","hosts":["ssh://b"]}}',
    );
    const ctx = remoteContext({ primary: parseSshUrl("ssh://a"), primaryUrl: "ssh://a", configFile: null }, raw);
    const { callerConfiguration, ...rest } = ctx.remoteSideOptions;
    expect(rest).toEqual(JSON.parse('{"hostDirectory":"clone","stopTimeoutMs":5,"__proto__":{"x":1},"owner":"o@' + require("node:os").hostname() + '","stateDirectory":"/r","helperPath":"/r/h","exposeHostVisiblePath":false}'));
    // This side's configuration, which the rest may not tell apart: any local option, and the --remote host, change it.
    expect(callerConfiguration).toMatch(/^[0-9a-f]{64}$/);
    const other = (change: Record<string, unknown>, primary = "ssh://a") => remoteContext({ primary: parseSshUrl(primary), primaryUrl: primary, configFile: null }, { ...raw, ...change }).remoteSideOptions.callerConfiguration;
    expect(other({})).toBe(callerConfiguration);
    expect(other({ remote: { ...raw.remote, idleTimeoutSeconds: 90 } })).not.toBe(callerConfiguration);
    expect(other({ stateDirectory: "/elsewhere" })).not.toBe(callerConfiguration);
    expect(other({}, "ssh://c")).not.toBe(callerConfiguration);
    expect(Object.keys(ctx.remoteSideOptions)).toContain("__proto__");
    expect(ctx.hosts.map((h) => h.key)).toEqual(["a", "b"]);
    const owned = remoteContext({ primary: parseSshUrl("ssh://a"), primaryUrl: "ssh://a", configFile: null }, { remote: { owner: "team" } });
    expect(owned.remoteSideOptions.owner).toBe("team");
  });

  test("only network remotes without credentials travel to the remote mirror", () => {
    for (const url of ["https://github.com/o/r.git", "ssh://git@github.com/o/r", "git@github.com:o/r.git", "https://user@host/r"]) expect(isShareableUrl(url), url).toBe(true);
    for (const url of ["https://user:token@github.com/o/r", "/home/me/repo", "file:///x", "ext::sh -c id", "-uhttps://x", "../r"]) expect(isShareableUrl(url), url).toBe(false);
  });
});
