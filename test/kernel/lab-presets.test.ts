import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkEgressHost, parseEgressTarget, type EgressTarget } from "../../src/kernel/egress-allowlist.js";
import { canonicalEndpointPattern, readEgress } from "../../src/kernel/egress-context.js";
import { LAB_ENDPOINTS, LAB_PRESETS, labHostsFor } from "../../src/kernel/lab-presets.js";
import type { PolicyProblem } from "../../src/kernel/policy-input.js";

/**
 * The lab presets (src/kernel/lab-presets.ts, issue 23): for a seat of each lab with nothing
 * else declared, every needed host of that lab is allowed by the decision the daemon runs
 * (checkEgressHost), and nothing else is — not an optional host of the same lab, not another
 * lab's hosts, not a look-alike name; `lab: false` leaves them all out. Every row is
 * well-formed and says where it came from and which CLI version it was checked against.
 */
const target = (text: string): EgressTarget => {
  const parsed = parseEgressTarget(text);
  if ("decision" in parsed) throw new Error(parsed.reason);
  return parsed;
};
const seatOf = (lab: string, network: unknown = {}) => {
  const problems: PolicyProblem[] = [];
  const context = readEgress(network, lab, ["seats", "s", "start", "network"], problems);
  expect(problems).toEqual([]);
  return context;
};
const allowed = (lab: string, endpoint: string, network?: unknown) => !("decision" in checkEgressHost(seatOf(lab, network), target(endpoint)));

const labs = Object.keys(LAB_PRESETS);

describe("lab presets", () => {
  it.each(labs)("%s: every row is a canonical host:port with a use, a source and a checked CLI version", (lab) => {
    const preset = LAB_PRESETS[lab]!;
    expect(preset.checked).toMatch(/^\d+\.\d+\.\d+/);
    expect(preset.package).toMatch(/^@[a-z0-9-]+\/[a-z0-9-]+$/);
    const endpoints = preset.hosts.map((h) => h.endpoint);
    expect(new Set(endpoints).size).toBe(endpoints.length);
    for (const h of preset.hosts) {
      const parsed = canonicalEndpointPattern(h.endpoint);
      expect(parsed.ok && parsed.pattern, h.endpoint).toBe(h.endpoint);
      expect(h.endpoint, "a preset names hosts, never a wildcard").not.toMatch(/\*/);
      expect(h.source.length).toBeGreaterThan(10);
    }
    expect(preset.hosts.some((h) => h.use === "model API" && !h.optional)).toBe(true);
  });

  it.each(labs)("%s: a seat of the lab reaches each needed host, and no optional one", (lab) => {
    for (const h of LAB_PRESETS[lab]!.hosts) expect(allowed(lab, h.endpoint), `${h.endpoint} (${h.use})`).toBe(!h.optional);
    expect(LAB_ENDPOINTS[lab]).toEqual(
      LAB_PRESETS[lab]!.hosts.filter((h) => !h.optional)
        .map((h) => h.endpoint)
        .sort(),
    );
  });

  it.each(labs)("%s: nothing else — not another lab's hosts, not a look-alike, not another port", (lab) => {
    for (const [other, preset] of Object.entries(LAB_PRESETS)) {
      if (other === lab) continue;
      for (const h of preset.hosts)
        if (!LAB_PRESETS[lab]!.hosts.some((mine) => mine.endpoint === h.endpoint)) expect(allowed(lab, h.endpoint), h.endpoint).toBe(false);
    }
    for (const h of LAB_PRESETS[lab]!.hosts.filter((x) => !x.optional)) {
      const [name, port] = h.endpoint.split(":") as [string, string];
      expect(allowed(lab, `${name}:${Number(port) === 443 ? 80 : 443}`)).toBe(false);
      expect(allowed(lab, `evil.${name}:${port}`)).toBe(false);
      expect(allowed(lab, `${name}.evil.test:${port}`)).toBe(false);
    }
  });

  it.each(labs)("%s: network.lab false leaves every preset host out; an explicit allow adds an optional one", (lab) => {
    for (const h of LAB_PRESETS[lab]!.hosts) expect(allowed(lab, h.endpoint, { lab: false })).toBe(false);
    const optional = LAB_PRESETS[lab]!.hosts.find((h) => h.optional);
    if (optional !== undefined) expect(allowed(lab, optional.endpoint, { allow: [optional.endpoint] })).toBe(true);
  });

  it("docs/agents.md's table is this data, row by row", () => {
    const docs = readFileSync(new URL("../../docs/agents.md", import.meta.url), "utf8");
    const rows = docs.split("\n").filter((l) => /^\| `[a-z]+` \|/.test(l));
    const expected = Object.entries(LAB_PRESETS).flatMap(([lab, p]) =>
      p.hosts.map((h) => `| \`${lab}\` | ${p.cli} ${p.checked} | \`${h.endpoint}\` | ${h.use} | ${h.optional ? "optional" : "yes"} |`),
    );
    expect(rows.map((r) => r.split(" | ").slice(0, 5).join(" | ") + " |")).toEqual(expected);
  });

  it("a seat of no lab gets no preset host", () => {
    for (const preset of Object.values(LAB_PRESETS)) for (const h of preset.hosts) expect(allowed(undefined as unknown as string, h.endpoint)).toBe(false);
  });

  it("labHostsFor names the CLI and use of a preset host, and nothing for another", () => {
    const optional = Object.values(LAB_PRESETS)
      .flatMap((p) => p.hosts)
      .find((h) => h.optional)!;
    expect(labHostsFor(optional.endpoint)).toContainEqual(expect.objectContaining({ use: optional.use, optional: true }));
    expect(labHostsFor("registry.npmjs.org:443").map((k) => k.cli)).toEqual(["Codex CLI", "Gemini CLI"]);
    expect(labHostsFor("example.com:443")).toEqual([]);
  });
});
