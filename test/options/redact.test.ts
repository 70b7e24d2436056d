import { expect, test } from "bun:test";
import { redactCredentials, scrubUrlCredentials, withoutUrlCredentials } from "../../src/redact.ts";

test("a URL's userinfo is redacted wherever it appears in text; other text is unchanged", () => {
  expect(redactCredentials("fatal: unable to access 'https://user:tok3n@example.test/r.git/': 403")).toBe("fatal: unable to access 'https://***@example.test/r.git/': 403");
  expect(redactCredentials("https://ghp_abc@github.com/o/r and ssh://git:pw@h:22/r")).toBe("https://***@github.com/o/r and ssh://***@h:22/r");
  expect(redactCredentials("git@github.com:o/r.git https://example.test/a@b")).toBe("git@github.com:o/r.git https://example.test/a@b");
});

test("a URL's query is redacted too (some hosts take a token there); the URL up to it stays", () => {
  expect(redactCredentials('source URL "https://example.test/r.git?access_token=ghp_s3cret#main" uses the git transport')).toBe('source URL "https://example.test/r.git?***" uses the git transport');
  expect(redactCredentials("https://u:p@h/r?t=1 and http://h/x")).toBe("https://***@h/r?*** and http://h/x");
  expect(redactCredentials("what? no URL here?")).toBe("what? no URL here?");
});

test("what is stored of a URL: no userinfo, except an ssh login name; other strings unchanged", () => {
  expect(withoutUrlCredentials("https://user:tok3n@example.test/r.git")).toBe("https://example.test/r.git");
  expect(withoutUrlCredentials("http://tok3n@127.0.0.1:8080/r?x=1#y")).toBe("http://127.0.0.1:8080/r?x=1#y");
  expect(withoutUrlCredentials("https://a@b@host/r")).toBe("https://host/r");
  expect(withoutUrlCredentials("ssh://git:pw@host:22/r")).toBe("ssh://git@host:22/r");
  expect(withoutUrlCredentials("git+ssh://git@host/r")).toBe("git+ssh://git@host/r");
  expect(withoutUrlCredentials("https://example.test/a@b")).toBe("https://example.test/a@b");
  expect(withoutUrlCredentials("git@github.com:o/r.git")).toBe("git@github.com:o/r.git");
  expect(withoutUrlCredentials("/srv/a://b@c")).toBe("/srv/a://b@c");
});

test("scrubUrlCredentials rewrites every string of a value and keeps its shape", () => {
  const input = { url: "https://u:p@h/r", list: ["ftp://u@h/x", 3, null], nested: { pushRemoteUrl: "https://t@h/r", path: "/abs" }, flag: true };
  expect(scrubUrlCredentials(input)).toEqual({ url: "https://h/r", list: ["ftp://h/x", 3, null], nested: { pushRemoteUrl: "https://h/r", path: "/abs" }, flag: true });
  expect(input.url).toBe("https://u:p@h/r");
});

test("the grammar of an ssh URL in a usage text is not a value: `ssh://[user@]host` stays, the URL given is redacted", () => {
  const message = 'a remote must be ssh://[user@]host[:port][/absolute/path/to/paseo-host-runtime], got "ssh://user:s3cret@host"';
  expect(redactCredentials(message)).toBe('a remote must be ssh://[user@]host[:port][/absolute/path/to/paseo-host-runtime], got "ssh://***@host"');
  expect(redactCredentials("remote doctor needs the host: ssh://[user@]host[:port]")).toBe("remote doctor needs the host: ssh://[user@]host[:port]");
  // A bracket that opens a userinfo is still a userinfo (a host follows its "@", never "]").
  expect(redactCredentials("https://[tok:s3cret@host/r")).toBe("https://***@host/r");
  expect(redactCredentials("ssh://root@[::1]:22/x ssh://[::1]:22/x")).toBe("ssh://***@[::1]:22/x ssh://[::1]:22/x");
});
