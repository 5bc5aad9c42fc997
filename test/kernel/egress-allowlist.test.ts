import { describe, expect, it } from "vitest";
import { checkEgressHost, matchEgress, parseEgressTarget, type EgressTarget } from "../../src/kernel/egress-allowlist.js";
import { canonicalCidr, canonicalEndpointPattern } from "../../src/kernel/egress-context.js";

/** The allowlist decision (§12): which host:port a seat's declared egress lets through. */
const target = (text: string): EgressTarget => {
  const parsed = parseEgressTarget(text);
  if ("decision" in parsed) throw new Error(parsed.reason);
  return parsed;
};

describe("egress allowlist", () => {
  const allow = ["api.example.com:443", "*.npmjs.org:443", "10.0.0.7:5432", "[2001:db8::1]:8080"];
  it.each([
    ["api.example.com:443", "api.example.com:443"],
    ["API.Example.COM.:443", "api.example.com:443"],
    ["registry.npmjs.org:443", "*.npmjs.org:443"],
    ["a.b.npmjs.org:443", "*.npmjs.org:443"],
    ["10.0.0.7:5432", "10.0.0.7:5432"],
    ["[2001:0db8:0:0::1]:8080", "[2001:db8::1]:8080"],
  ])("allows %s (by %s)", (text, by) => {
    expect(matchEgress(allow, target(text))).toBe(by);
  });
  it.each([
    ["api.example.com:80", "another port"],
    ["npmjs.org:443", "the apex of a wildcard"],
    ["evilnpmjs.org:443", "a suffix that is not a label boundary"],
    ["api.example.com.evil.test:443", "a name that only starts like an allowed one"],
    ["10.0.0.8:5432", "another address"],
    ["[2001:db8::2]:8080", "another v6 address"],
  ])("refuses %s (%s)", (text) => {
    expect(matchEgress(allow, target(text))).toBeUndefined();
  });
  it("never lets a wildcard pattern match an IP literal", () => {
    expect(matchEgress(["*.0.0.1:80"], target("127.0.0.1:80"))).toBeUndefined();
  });
  it.each(["", "example.com", "example.com:0", "example.com:70000", "*.example.com:443", "exa mple.com:443", "a:b:c", "[::1:80", "ex_ample.com:443"])(
    "refuses the malformed target %j",
    (text) => {
      const parsed = parseEgressTarget(text);
      expect("decision" in parsed && parsed.rule).toBe("request.malformed");
    },
  );
  it("refuses with egress.host, naming the fix, when nothing is declared or the target is not listed", () => {
    const none = checkEgressHost(undefined, target("api.example.com:443"));
    expect("decision" in none && none.rule).toBe("egress.host");
    expect("decision" in none && none.reason).toContain("start.network.allow");
    const listed = checkEgressHost({ allow, private: [] }, target("evil.test:443"));
    expect("decision" in listed && listed.rule).toBe("egress.host");
    expect(checkEgressHost({ allow, private: [] }, target("api.example.com:443"))).toEqual({ allowedBy: "api.example.com:443" });
  });
});

describe("egress patterns and ranges in the team file (canonical forms)", () => {
  it.each([
    ["Api.Example.com:443", "api.example.com:443"],
    ["*.NPMJS.org:443", "*.npmjs.org:443"],
    ["[::FFFF:127.0.0.1]:80", "[::ffff:7f00:1]:80"],
  ])("%s → %s", (text, canonical) => {
    const parsed = canonicalEndpointPattern(text);
    expect(parsed.ok && parsed.pattern).toBe(canonical);
  });
  it.each(["*.com:443", "*:443", "a.*.com:443", "host", "host:", "-bad.com:443"])("refuses the pattern %j", (text) => {
    expect(canonicalEndpointPattern(text).ok).toBe(false);
  });
  it.each([
    ["10.1.2.3/8", "10.0.0.0/8"],
    ["127.0.0.1", "127.0.0.1/32"],
    ["fd00::1/8", "fd00::/8"],
    ["::1", "::1/128"],
  ])("CIDR %s → %s", (text, canonical) => {
    expect(canonicalCidr(text)).toBe(canonical);
  });
  it.each(["10.0.0.0/33", "10.0.0/8", "256.0.0.1/32", "fd00::/129", "example.com/8", "10.0.0.0/8/1", "01.2.3.4/32"])("refuses the range %j", (text) => {
    expect(canonicalCidr(text)).toBeUndefined();
  });
});
