import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { SCRUBBED_CREDENTIAL, scrubDetail, scrubReason, scrubSummary, secretForms } from "../../src/broker/index.js";

const TOKEN = "tkn-canary/7f3a+9c2e=51b84d06aa19";
const forms = secretForms([TOKEN]);
const b64 = (s: string) => Buffer.from(s).toString("base64");
const b64url = (s: string) => Buffer.from(s).toString("base64url");
const hex = (s: string) => Buffer.from(s).toString("hex");

describe("the broker's scrub (§11): a value carrying the credential in any form is never served", () => {
  const cases: [string, string][] = [
    ["the raw token", TOKEN],
    ["the token inside text", `before ${TOKEN} after`],
    ["the token in upper case", TOKEN.toUpperCase()],
    ["base64 of the token", b64(TOKEN)],
    ["base64 of the token after one byte", b64(`x${TOKEN}`)],
    ["base64 of the token after two bytes", b64(`xy${TOKEN}`)],
    ["base64 of a basic-auth pair", b64(`x-access-token:${TOKEN}`)],
    ["base64url of the token inside text", `see ${b64url(`user:${TOKEN}!`)} here`],
    ["hex of the token", hex(TOKEN)],
    ["HEX of the token", hex(TOKEN).toUpperCase()],
    ["the token URL-encoded", `https://x.example/?t=${encodeURIComponent(TOKEN)}`],
    ["the token with only some characters percent-encoded", TOKEN.replace("t", "%74")],
  ];
  for (const [what, value] of cases) {
    it(`scrubs ${what}`, () => {
      expect(scrubReason(value, forms)).toBe(SCRUBBED_CREDENTIAL);
    });
  }

  it("scrubs a value with a known key shape, naming the shape and never quoting it", () => {
    const reason = scrubReason(`use ghp_${"a".repeat(36)} for now`, forms);
    expect(reason).toBe("[scrubbed by teamd: looks like a GitHub token]");
  });

  it("serves clean values untouched, and ignores secrets too short to scrub without eating text", () => {
    for (const value of ["Fix the login redirect", "bug", "https://github.example/acme/web/issues/2", "", "7f3a"])
      expect(scrubReason(value, forms)).toBeUndefined();
    expect(secretForms(["short"]).folded).toEqual([]);
  });

  it("scrubs every field of a task, and a body line by line (the rest stays readable)", () => {
    const task = {
      id: "7",
      title: `x ${TOKEN}`,
      state: "open",
      labels: ["ok", b64(TOKEN)],
      assignee: TOKEN,
      url: `u?${encodeURIComponent(TOKEN)}`,
      claimed: false,
    };
    const s = scrubSummary(task, forms);
    expect(s).toEqual({
      id: "7",
      title: SCRUBBED_CREDENTIAL,
      state: "open",
      labels: ["ok", SCRUBBED_CREDENTIAL],
      assignee: SCRUBBED_CREDENTIAL,
      url: SCRUBBED_CREDENTIAL,
      claimed: false,
    });
    const d = scrubDetail({ ...task, body: `line one\nkey ${hex(TOKEN)}\nline three` }, forms);
    expect(d.body).toBe(`line one\n${SCRUBBED_CREDENTIAL}\nline three`);
  });

  it("scrubs a base64 blob of the token wrapped across lines", () => {
    const blob = b64(`${"z".repeat(20)}${TOKEN}${"z".repeat(20)}`);
    const wrapped = blob.match(/.{1,16}/g)?.join("\n") ?? "";
    expect(scrubDetail({ id: "1", title: "", state: "", labels: [], assignee: "", url: "", claimed: false, body: wrapped }, forms).body).toBe(
      SCRUBBED_CREDENTIAL,
    );
  });

  it("property: any text around any encoding of any token is scrubbed", () => {
    const token = fc.string({ minLength: 12, maxLength: 60, unit: "binary-ascii" });
    const around = fc.string({ maxLength: 20 });
    const encode = fc.constantFrom<(s: string) => string>(
      (s) => s,
      b64,
      b64url,
      hex,
      (s) => hex(s).toUpperCase(),
      encodeURIComponent,
    );
    fc.assert(
      fc.property(token, around, around, encode, fc.boolean(), (t, before, after, enc, inside) => {
        const f = secretForms([t]);
        // Encoded alone, or encoded together with its surroundings.
        const value = inside ? enc(`${before}${t}${after}`) : `${before}${enc(t)}${after}`;
        return scrubReason(value, f) === SCRUBBED_CREDENTIAL;
      }),
      { numRuns: 500 },
    );
  });
});
