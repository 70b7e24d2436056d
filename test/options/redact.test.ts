import { expect, test } from "bun:test";
import { redactCredentials } from "../../src/redact.ts";

test("a URL's userinfo is redacted wherever it appears in text; other text is unchanged", () => {
  expect(redactCredentials("fatal: unable to access 'https://user:tok3n@example.test/r.git/': 403")).toBe("fatal: unable to access 'https://***@example.test/r.git/': 403");
  expect(redactCredentials("https://ghp_abc@github.com/o/r and ssh://git:pw@h:22/r")).toBe("https://***@github.com/o/r and ssh://***@h:22/r");
  expect(redactCredentials("git@github.com:o/r.git https://example.test/a@b")).toBe("git@github.com:o/r.git https://example.test/a@b");
});
