import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LINUX_BASE, etcFoldersToList, matchesName } from "../../src/sandbox/linux-base.js";
import { renderSeatbeltProfile, type SeatbeltInput } from "../../src/sandbox/seatbelt-profile.js";
import { ROOT } from "../support/programs.js";
import { expectGolden } from "./support/golden.js";

const profile = (name: string) => readFileSync(join(ROOT, "sandbox-profiles", name), "utf8");

describe("sandbox-profiles/linux-base.json", () => {
  it("is the documented copy of LINUX_BASE, field for field", () => {
    const doc = JSON.parse(profile("linux-base.json")) as { base: unknown; fields: Record<string, string> };
    expect(doc.base).toEqual(JSON.parse(JSON.stringify(LINUX_BASE)));
    for (const field of Object.keys(LINUX_BASE)) expect(Object.keys(doc.fields).some((f) => f === field || f.startsWith(`${field}.`))).toBe(true);
  });

  it("lists the /etc folders it filters inside, and matches names with * within one name", () => {
    expect(etcFoldersToList()).toEqual(["NetworkManager", "ppp", "security", "ssh", "ssl"]);
    expect(matchesName("*key*", "ssh_host_rsa_key")).toBe(true);
    expect(matchesName("*key*", "ssh_host_rsa_key.pub")).toBe(true);
    expect(matchesName("*key*", "ssh_config")).toBe(false);
    expect(matchesName("*secrets*", "chap-secrets")).toBe(true);
    expect(matchesName("shadow", "shadow-")).toBe(false);
    expect(matchesName("a*b*c", "abc")).toBe(true);
    expect(matchesName("a*b*c", "acb")).toBe(false);
    expect(matchesName("ab*ba", "aba")).toBe(false);
  });
});

describe("sandbox-profiles/windows-job-limits.json", () => {
  it("kills on close, never allows breakaway, and says it is not built", () => {
    const doc = JSON.parse(profile("windows-job-limits.json")) as { status: string; jobObject: { basicLimitFlags: string[]; neverSet: string[] } };
    expect(doc.status).toBe("not built");
    expect(doc.jobObject.basicLimitFlags).toContain("JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE");
    for (const flag of doc.jobObject.neverSet) expect(doc.jobObject.basicLimitFlags).not.toContain(flag);
  });
});

describe("the macOS Seatbelt profile (pure generator over the template)", () => {
  const input: SeatbeltInput = {
    seat: { team: "alpha", seat: "builder" },
    writable: [
      "/Users/owner/.local/state/teamd/seats/builder/repo",
      "/Users/owner/.local/state/teamd/seats/builder/home",
      "/private/var/folders/xy/T/teamd-builder",
    ],
    readOnly: ["/Users/owner/projects/app"],
    denied: ["/Users/owner/projects/app/.git", "/Users/owner/projects/app/teamd.yaml", '/Users/owner/odd "name"\\x'],
    socket: "/Users/owner/.local/state/teamd/run/seats/alpha.builder.sock",
    node: "/opt/homebrew/bin/node",
    shimBundle: "/opt/homebrew/lib/teamd-shim",
  };
  const template = profile("macos-seatbelt.sb.template");

  it("renders the golden profile", () => {
    const out = renderSeatbeltProfile(template, input);
    if (!out.ok) throw new Error(out.refusal.reason);
    expectGolden("seatbelt-builder.sb", out.value);
    expect(out.value).toMatch(/^\(deny default\)$/m);
    expect(out.value).not.toMatch(/;;@/);
    // Reserved objects are denied after every allow: in SBPL the later rule wins.
    expect(out.value.lastIndexOf("(deny file-read* file-write*")).toBeGreaterThan(out.value.lastIndexOf("(allow"));
    expect(out.value).toContain('(subpath "/Users/owner/odd \\"name\\"\\\\x")');
  });

  it("renders no allow rule at all for an empty list (an allow without filters would allow everything)", () => {
    const out = renderSeatbeltProfile(template, { ...input, readOnly: [] });
    if (!out.ok) throw new Error(out.refusal.reason);
    expect(out.value).not.toMatch(/\(allow file-read\*\s*\)/);
    expect(out.value.match(/\(allow file-read\*$/gm)?.length).toBe(1); // the system reads only
  });

  it.each([
    ["a template that allows by default", template.replace("(deny default)", "(deny default)\n(allow default)"), /allows by default/],
    ["a template that does not deny by default", template.replace("(deny default)", ""), /does not deny by default/],
    ["a template without the reserved denials", template.replace(";;@DENIED@", ""), /@DENIED@ exactly once/],
    ["a template with an unknown placeholder", `${template}\n;;@EXTRA@\n`, /unknown placeholder/],
  ])("refuses %s", (_what, text, reason) => {
    const out = renderSeatbeltProfile(text, input);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.refusal.reason).toMatch(reason);
  });

  it("refuses a path that is not canonical", () => {
    const out = renderSeatbeltProfile(template, { ...input, writable: ["/Users/owner/../etc"] });
    expect(out).toMatchObject({ ok: false, refusal: { rule: "containment.undecidable" } });
  });
});
