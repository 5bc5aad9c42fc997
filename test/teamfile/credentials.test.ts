import { describe, expect, it } from "vitest";
import { CREDENTIAL_SHAPES, redactCredentials } from "../../src/teamfile/credentials.js";

/** One made-up value of each known shape (none is a real key). */
const SAMPLES: Record<string, string> = {
  "Anthropic API key": `sk-ant-api03-${"a1".repeat(12)}`,
  "OpenAI-style secret key": `sk-proj-${"b2".repeat(12)}`,
  "GitHub token": `ghp_${"c3".repeat(18)}`,
  "GitHub fine-grained token": `github_pat_${"d4".repeat(12)}`,
  "AWS access key id": "AKIAABCDEFGHIJKLMNOP",
  "Slack token": "xoxb-1234567890-abcdef",
  "Google API key": `AIza${"e".repeat(35)}`,
  "PEM private key": "-----BEGIN RSA PRIVATE KEY-----",
};

describe("redactCredentials (what an owner typed, before it is recorded)", () => {
  it("replaces a value of every shape, whole or inside --flag=, NAME= and shell text, by its shape, length and hash", () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(CREDENTIAL_SHAPES.map((s) => s.name).sort());
    for (const [name, value] of Object.entries(SAMPLES)) {
      for (const text of [value, `--key=${value}`, `KEY=${value}`, `echo KEY=${value} > ~/.env`]) {
        const out = redactCredentials(text);
        expect(out, `${name} in ${text}`).not.toContain(value);
        expect(out).toContain(`[redacted ${name}: ${value.length} chars, sha256 `);
      }
    }
  });
  it("leaves other text alone, and redacts the same value the same way (a record can be matched, not read)", () => {
    expect(redactCredentials("npm test -- --grep sk-short")).toBe("npm test -- --grep sk-short");
    expect(redactCredentials(SAMPLES["GitHub token"]!)).toBe(redactCredentials(SAMPLES["GitHub token"]!));
  });
});
