import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type LoadResult, formatTeamFileErrors, loadTeamFile, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";
import type { RuleId } from "../../src/kernel/rules.js";

/** Tables for the team-file loader: lines and fixes, key shapes, not-supported keys, canonical form. */

function errorsOf(result: LoadResult): { rule: RuleId; line?: number; at: string; message: string; fix: string }[] {
  if (result.ok) throw new Error("expected the team file to be refused");
  return [...result.errors];
}

const HEAD = "version: 1\nteam: web\n";

describe("every error carries its line and a fix", () => {
  const table: { description: string; yaml: string; rule: RuleId; line: number; fix: RegExp }[] = [
    { description: "unknown top-level key, with a suggestion", yaml: `${HEAD}seets: {}\n`, rule: "teamfile.schema", line: 3, fix: /did you mean 'seats'/ },
    {
      description: "misspelt capability, with a suggestion",
      yaml: `${HEAD}seats:\n  a:\n    capabilities:\n      raed: ~\n`,
      rule: "vocab.unknown",
      line: 6,
      fix: /did you mean 'read'/,
    },
    {
      description: "dimension not taken",
      yaml: `${HEAD}seats:\n  a:\n    capabilities:\n      read: { branch: main }\n`,
      rule: "vocab.dimension",
      line: 6,
      fix: /read takes path/,
    },
    {
      description: "undeclared env",
      yaml: `${HEAD}seats:\n  a:\n    capabilities:\n      deploy:\n        env: [prod]\n`,
      rule: "scope.env",
      line: 7,
      fix: /declare\.envs/,
    },
    {
      description: "path glob",
      yaml: `${HEAD}seats:\n  a:\n    capabilities:\n      write:\n        path:\n          - src/\n          - docs/*\n`,
      rule: "scope.path",
      line: 9,
      fix: /name the directory/,
    },
    {
      description: "undefined role",
      yaml: `${HEAD}seats:\n  a:\n    roles:\n      - executor\n      - architect\n`,
      rule: "teamfile.schema",
      line: 7,
      fix: /define it under roles/,
    },
    { description: "repeated key", yaml: `${HEAD}seats:\n  a: {}\n  a: {}\n`, rule: "teamfile.syntax", line: 5, fix: /repeated key/ },
    { description: "version quoted", yaml: `version: "1"\nteam: web\n`, rule: "teamfile.schema", line: 1, fix: /no quotes/ },
    { description: "not supported yet", yaml: `${HEAD}envelope: {}\n`, rule: "teamfile.unsupported", line: 3, fix: /refuses what it does not enforce/ },
  ];
  it.each(table)("$description", ({ yaml, rule, line, fix }) => {
    const errors = errorsOf(loadTeamFileText(yaml));
    const hit = errors.find((e) => e.rule === rule);
    expect(hit, JSON.stringify(errors)).toBeDefined();
    expect(hit?.line).toBe(line);
    expect(hit?.fix).toMatch(fix);
  });

  it("reports every error, not only the first, in file order", () => {
    const yaml = `${HEAD}seats:\n  a:\n    roles: [nope]\n    capabilities:\n      wrte: ~\n      read: { path: [../out] }\n  B: {}\n`;
    const errors = errorsOf(loadTeamFileText(yaml));
    expect(errors.map((e) => [e.rule, e.line])).toEqual([
      ["teamfile.schema", 5],
      ["vocab.unknown", 7],
      ["scope.path", 8],
      ["teamfile.schema", 9],
    ]);
  });

  it("formats errors as file:line:column with the rule, its section and the fix", () => {
    const text = formatTeamFileErrors(errorsOf(loadTeamFileText(`${HEAD}create-bounds: {}\n`)), "teamd.yaml");
    expect(text).toBe(
      "teamd.yaml:3:1: create-bounds are not written in a team file: they are owner-sovereign and written on the machine (§10), where no seat's file can carry them [teamfile.schema §10] (at create-bounds)\n" +
        "  fix: remove it, and run `teamd create-bounds set SEAT@TEAM …` as the owner",
    );
  });
});

describe("values with a known credential shape are refused (§11)", () => {
  const keys: { shape: string; value: string }[] = [
    { shape: "Anthropic", value: "sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1" },
    { shape: "OpenAI", value: "sk-proj-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF" },
    { shape: "OpenAI (legacy)", value: "sk-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8c" },
    { shape: "GitHub classic", value: "ghp_Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8" },
    { shape: "GitHub OAuth", value: "gho_Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8" },
    { shape: "GitHub fine-grained", value: "github_pat_11ABCDEFG0123456789_abcdefghijkl" },
    { shape: "AWS", value: "AKIAIOSFODNN7EXAMPLE" },
    { shape: "Slack bot", value: "xoxb-123456789012-abcdefABCDEF" },
    { shape: "Slack user", value: "xoxp-123456789012-abcdefABCDEF" },
    { shape: "Google", value: "AIzaSyA-1234567890abcdefghijklmnopqrstu" },
    { shape: "PEM", value: "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----" },
    { shape: "embedded in an argument", value: "--token=ghp_Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8" },
  ];
  it.each(keys)("$shape", ({ value }) => {
    const data = { version: 1, team: "web", seats: { a: { start: { command: ["agent"], env: { TOKEN: value } } } } };
    const errors = errorsOf(loadTeamFileData(data));
    const hit = errors.find((e) => e.rule === "secret.shape");
    expect(hit?.at).toBe("seats.a.start.env.TOKEN");
    // The refusal never echoes the secret.
    expect(JSON.stringify(errors)).not.toContain(value.slice(8, 20));
  });

  const notKeys = ["sk-short", "task-sk-1", "ask-anything-you-like", "AKIA-not-a-key", "ghp_short", "xoxb-", "-----BEGIN PUBLIC KEY-----", "docs/sk/ant"];
  it.each(notKeys)("%s is not a key shape", (value) => {
    const data = { version: 1, team: "web", seats: { a: { start: { command: ["agent", value] } } } };
    expect(loadTeamFileData(data).ok).toBe(true);
  });

  it("finds a key shape in a YAML key or a comment-free flow value, at its line", () => {
    const errors = errorsOf(loadTeamFileText(`${HEAD}seats:\n  a:\n    start: { command: [agent, "sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1"] }\n`));
    expect(errors.find((e) => e.rule === "secret.shape")?.line).toBe(5);
  });

  it("finds a key shape even when the YAML does not parse", () => {
    const errors = errorsOf(loadTeamFileText(`${HEAD}seats:\n  a: [\n    sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1\n`));
    expect(errors.map((e) => e.rule)).toContain("secret.shape");
    expect(errors.map((e) => e.rule)).toContain("teamfile.syntax");
  });

  describe("a value that is a path to a real existing directory is exempt", () => {
    const repo = mkdtempSync(path.join(tmpdir(), "teamd-teamfile-"));
    afterAll(() => rmSync(repo, { recursive: true, force: true }));
    const name = "sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1";
    const file = path.join(repo, "teamd.yaml");
    writeFileSync(file, `${HEAD}seats:\n  a:\n    start:\n      command: [agent]\n      workdir: ${name}\n`);

    it("refused while no such directory exists", async () => {
      expect(errorsOf(await loadTeamFile(file)).map((e) => e.rule)).toEqual(["secret.shape"]);
    });
    it("accepted once it is a real directory", async () => {
      mkdirSync(path.join(repo, name));
      const result = await loadTeamFile(file);
      expect(result.ok).toBe(true);
    });
    it("a regular file of that name is not a directory: refused", async () => {
      const other = "sk-ant-api03-AAAAbbbbCCCCddddEEEEffff";
      writeFileSync(path.join(repo, other), "x");
      writeFileSync(file, `${HEAD}seats:\n  a:\n    start:\n      command: [agent]\n      workdir: ${other}\n`);
      expect(errorsOf(await loadTeamFile(file)).map((e) => e.rule)).toEqual(["secret.shape"]);
    });
  });
});

describe("keys for features not enforced yet are refused as not supported, naming where they land", () => {
  const table: { where: string; yaml: string; area: RegExp }[] = [
    { where: "top: leases", yaml: `${HEAD}leases: []\n`, area: /§7.*never written in the team file/ },
    { where: "top: envelope", yaml: `${HEAD}envelope: {}\n`, area: /resource envelope/ },
    { where: "declare: roots", yaml: `${HEAD}declare:\n  roots: [sub]\n`, area: /repository roots/ },
    { where: "role: constraints", yaml: `${HEAD}roles:\n  r:\n    constraints: {}\n`, area: /§5/ },
    { where: "role: extends", yaml: `${HEAD}roles:\n  r:\n    extends: executor\n`, area: /§13/ },
    { where: "seat: leases", yaml: `${HEAD}seats:\n  a:\n    leases: []\n`, area: /§7/ },
    { where: "seat: deny", yaml: `${HEAD}seats:\n  a:\n    deny: [write]\n`, area: /§8.*top of the file/ },
    { where: "role: ceiling", yaml: `${HEAD}roles:\n  r:\n    ceiling: {}\n`, area: /§8.*top of the file/ },
    { where: "seat: leads", yaml: `${HEAD}seats:\n  a:\n    leads: true\n`, area: /§9.*top of the file/ },
    { where: "seat: constraints", yaml: `${HEAD}seats:\n  a:\n    constraints: []\n`, area: /§5.*top of the file/ },
    { where: "start: binds", yaml: `${HEAD}seats:\n  a:\n    start:\n      command: [x]\n      binds: [/data]\n`, area: /containment/ },
    { where: "capability: leads", yaml: `${HEAD}seats:\n  a:\n    capabilities:\n      leads: ~\n`, area: /§9.*top of the file/ },
    { where: "capability: all", yaml: `${HEAD}seats:\n  a:\n    capabilities:\n      all: ~\n`, area: /agree: ~/ },
  ];
  it.each(table)("$where", ({ yaml, area }) => {
    const errors = errorsOf(loadTeamFileText(yaml));
    const hit = errors.find((e) => e.rule === "teamfile.unsupported");
    expect(hit, JSON.stringify(errors)).toBeDefined();
    expect(hit?.message).toMatch(/not supported yet/);
    expect(hit?.message).toMatch(area);
    expect(hit?.line).toBeGreaterThan(0);
  });
});

describe("grant and agree (§10): held by the seat the owner writes them on, nowhere else", () => {
  it("on a seat's own capabilities, with no scope: held, in the canonical form and the policy hash, outside the operational set", () => {
    const loaded = loadTeamFileText(
      `${HEAD}seats:\n  a:\n    capabilities:\n      read: ~\n      grant: ~\n      agree: {}\n  b:\n    capabilities:\n      read: ~\n`,
    );
    expect(loaded.ok, JSON.stringify(loaded.ok ? "" : loaded.errors)).toBe(true);
    if (!loaded.ok) return;
    expect(loaded.policy.seats.a?.admin).toEqual(["agree", "grant"]);
    expect(JSON.parse(loaded.canonical).seats.a.capabilities).toMatchObject({ grant: {}, agree: {} });
    // A same copy compares the operational set (§10): a seat's grant never makes its copy differ, nor is copied.
    expect(loaded.policy.seats.a?.capabilitiesHash).toBe(loaded.policy.seats.b?.capabilitiesHash);
    // The canonical form loads back to the same policy (the policy in force is rebuilt from it).
    const again = loadTeamFileText(loaded.canonical);
    expect(again.ok && again.hashes.policy).toBe(loaded.hashes.policy);
  });
  it.each([
    ["as a seat key", `${HEAD}seats:\n  a:\n    grant: true\n`, /capability one seat holds/],
    ["in a role", `${HEAD}roles:\n  r:\n    capabilities:\n      agree: ~\n`, /never through a role/],
    ["in the leads envelope", `${HEAD}leads:\n  seat: a\n  envelope:\n    grant: ~\nseats:\n  a: {}\n`, /never leased/],
    ["with a scope", `${HEAD}seats:\n  a:\n    capabilities:\n      grant: { path: src/ }\n`, /no project scope/],
  ])("refused %s", (_where, yaml, message) => {
    const errors = errorsOf(loadTeamFileText(yaml));
    expect(
      errors.find((e) => e.rule === "teamfile.schema" && message.test(e.message)),
      JSON.stringify(errors),
    ).toBeDefined();
  });
});

describe("the canonical form and hashes", () => {
  const block = `# a comment changes nothing
version: 1
team: web
review: { mode: distinct-seat }
declare:
  branches:
    - main
    - refs/heads/release/*
  envs: [staging]
  labs: [anthropic]
roles:
  docs:
    capabilities:
      write:
        path: [docs/]
      read: { path: [./docs, docs/guide] }
seats:
  alice:
    lab: anthropic
    roles: [docs, observer]
    capabilities:
      merge:
        - { path: docs/, branch: main }
`;
  const flowReordered = `{ seats: { alice: { capabilities: { merge: [ { branch: refs/heads/main, path: "docs" } ] }, roles: [observer, docs, docs], lab: "anthropic" } },
  roles: { docs: { capabilities: { read: { path: "docs/" }, write: { path: docs } } } },
  declare: { labs: [anthropic], envs: ["staging"], branches: ["release/*", main, main] },
  team: "web", version: 1, review: { mode: distinct-seat } }
`;
  const asData = {
    version: 1,
    team: "web",
    review: { mode: "distinct-seat" },
    declare: { branches: ["main", "release/*"], envs: ["staging"], labs: ["anthropic"] },
    roles: { docs: { capabilities: { write: { path: "docs" }, read: { path: ["docs"] } } } },
    seats: { alice: { lab: "anthropic", roles: ["docs", "observer"], capabilities: { merge: { path: "docs/", branch: "main" } } } },
  };
  const load = (r: LoadResult): Extract<LoadResult, { ok: true }> => {
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r;
  };

  it("is independent of formatting, quoting, key order, redundant spelling and repeats", () => {
    const a = load(loadTeamFileText(block));
    const b = load(loadTeamFileText(flowReordered));
    const c = load(loadTeamFileData(asData));
    expect(b.canonical).toBe(a.canonical);
    expect(c.canonical).toBe(a.canonical);
    expect(b.hashes).toEqual(a.hashes);
    expect(c.hashes).toEqual(a.hashes);
    expect(a.hashes.policy).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("prints unconstrained as * and keeps empty distinct", () => {
    const r = load(loadTeamFileData({ version: 1, team: "web", seats: { a: { capabilities: { read: null, write: { path: [] } } } } }));
    expect(r.canonical).toContain('"read":[{"path":"*"}]');
    expect(r.canonical).toContain('"write":[{"path":[]}]');
  });

  it("changes when the meaning changes", () => {
    const a = load(loadTeamFileText(block));
    const wider = load(loadTeamFileText(block.replace("path: [docs/]", "path: [docs/, src/]")));
    expect(wider.hashes.policy).not.toBe(a.hashes.policy);
    expect(wider.hashes.roles.docs).not.toBe(a.hashes.roles.docs);
    // A role unaffected by the change keeps its hash; so does the seat's unrelated template.
    expect(wider.hashes.roles.observer).toBe(a.hashes.roles.observer);
  });

  it("identifies a role by its resolved content, so an unchanged name cannot silently widen", () => {
    const narrow = load(loadTeamFileData({ version: 1, team: "web", roles: { r: { template: "executor", scope: { path: "docs/" } } } }));
    const wide = load(loadTeamFileData({ version: 1, team: "web", roles: { r: { template: "executor" } } }));
    const same = load(loadTeamFileData({ version: 1, team: "web", roles: { r: { capabilities: { read: { path: "docs" }, write: { path: "docs" } } } } }));
    expect(wide.hashes.roles.r).not.toBe(narrow.hashes.roles.r);
    expect(wide.hashes.roles.r).toBe(wide.hashes.roles.executor);
    // Written differently, resolved the same: one content, one hash.
    expect(same.hashes.roles.r).toBe(narrow.hashes.roles.r);
  });

  it("pins start files by content: the seat's context hash changes, the file's does not", () => {
    const data = { version: 1, team: "web", seats: { a: { start: { command: ["claude"], files: ["CLAUDE.md"] } } } };
    const one = load(loadTeamFileData(data, { readStartFile: () => new TextEncoder().encode("one") }));
    const two = load(loadTeamFileData(data, { readStartFile: () => new TextEncoder().encode("two") }));
    expect(two.hashes.policy).toBe(one.hashes.policy);
    expect(two.hashes.seats.a?.context).not.toBe(one.hashes.seats.a?.context);
    expect(one.startFiles["CLAUDE.md"]).toMatch(/^sha256:/);
  });
});

describe("the policy handed to the kernel", () => {
  it("is deeply frozen", () => {
    const r = loadTeamFileData({
      version: 1,
      team: "web",
      review: { mode: "distinct-seat" },
      declare: { branches: ["main"] },
      seats: { a: { roles: ["executor"], capabilities: { merge: { branch: "main" } } } },
    });
    if (!r.ok) throw new Error("load failed");
    const seat = r.policy.seats.a;
    expect(Object.isFrozen(r.policy)).toBe(true);
    expect(Object.isFrozen(r.policy.declared.branches)).toBe(true);
    expect(Object.isFrozen(seat?.authorities)).toBe(true);
    expect(Object.isFrozen(seat?.authorities[0]?.scope)).toBe(true);
    expect(Object.isFrozen(seat?.byCapability.merge?.[0]?.scope.branch)).toBe(true);
    expect(() => ((r.policy.seats as Record<string, unknown>).b = {})).toThrow();
  });

  it("resolves every seat's list: roles' grants first, then direct ones, each a separate authority", () => {
    const r = loadTeamFileData({
      version: 1,
      team: "web",
      roles: { d: { capabilities: { write: { path: "docs" } } } },
      seats: { a: { roles: ["d", "executor"], capabilities: { write: [{ path: "x" }, { path: "y" }] } } },
    });
    if (!r.ok) throw new Error("load failed");
    const ids = r.policy.seats.a?.authorities.map((x) => x.id) ?? [];
    expect(ids.slice(0, 3)).toEqual(["a/role:d/write/0", "a/role:executor/read/0", "a/role:executor/write/0"]);
    // Two unnamed grants of one capability: each keyed by its scope, never by its position.
    expect(ids.slice(3)).toEqual([expect.stringMatching(/^a\/direct\/write\/#[0-9a-f]{16}$/), expect.stringMatching(/^a\/direct\/write\/#[0-9a-f]{16}$/)]);
    expect(new Set(ids).size).toBe(5);
  });

  describe("grant ids never follow position (issue 24, item 11; §7)", () => {
    const idsOf = (writes: unknown): string[] => {
      const r = loadTeamFileData({ version: 1, team: "web", seats: { a: { capabilities: { write: writes } } } });
      if (!r.ok) throw new Error(JSON.stringify(r.errors));
      return (r.policy.seats.a?.authorities ?? []).map((x) => x.id);
    };
    it("removing one unnamed grant leaves the others' ids as they were (a positional id shifted the next into it)", () => {
      const three = idsOf([{ path: "a" }, { path: "b" }, { path: "c" }]);
      const two = idsOf([{ path: "b" }, { path: "c" }]);
      expect(two).toEqual(three.slice(1));
    });
    it("a named grant keeps its id when its scope widens; an unnamed one of several gets a fresh id", () => {
      expect(idsOf([{ name: "docs", path: "docs" }, { path: "src" }])[0]).toBe("a/direct/write/docs");
      expect(idsOf([{ name: "docs", path: "." }, { path: "src" }])[0]).toBe("a/direct/write/docs");
      expect(idsOf([{ path: "docs" }, { path: "src" }])).not.toContain(idsOf([{ path: "." }, { path: "src" }])[0]);
    });
    it("the one grant of its capability is /0 however its scope changes", () => {
      expect(idsOf({ path: "docs" })).toEqual(["a/direct/write/0"]);
      expect(idsOf({ path: "." })).toEqual(["a/direct/write/0"]);
    });
    it("a name is a grant's: refused where it is not a name, twice in one capability, or in the ceiling or the deny", () => {
      const rules = (data: Record<string, unknown>) => errorsOf(loadTeamFileData({ version: 1, team: "web", ...data })).map((e) => [e.rule, e.at]);
      expect(rules({ seats: { a: { capabilities: { write: [{ name: "Docs", path: "a" }] } } } })).toEqual([
        ["teamfile.schema", "seats.a.capabilities.write[0].name"],
      ]);
      expect(
        rules({
          seats: {
            a: {
              capabilities: {
                write: [
                  { name: "x", path: "a" },
                  { name: "x", path: "b" },
                ],
              },
            },
          },
        }),
      ).toEqual([["teamfile.schema", "seats.a.capabilities.write[1].name"]]);
      expect(rules({ deny: { write: { name: "x", path: "a" } } })).toEqual([["teamfile.schema", "deny.write.name"]]);
    });
    it("the name is in the canonical form and loads back to the same ids", () => {
      const r = loadTeamFileData({ version: 1, team: "web", seats: { a: { capabilities: { write: [{ name: "docs", path: "docs" }, { path: "src" }] } } } });
      if (!r.ok) throw new Error(JSON.stringify(r.errors));
      expect(r.canonical).toContain('"name":"docs"');
      const again = loadTeamFileData(JSON.parse(r.canonical));
      if (!again.ok) throw new Error(JSON.stringify(again.errors));
      expect(again.policy.seats.a?.authorities.map((x) => x.id)).toEqual(r.policy.seats.a?.authorities.map((x) => x.id));
    });
  });

  it("refuses a seat or role named __proto__ instead of losing it", () => {
    const yaml = `${HEAD}seats:\n  __proto__:\n    roles: [executor]\n`;
    expect(errorsOf(loadTeamFileText(yaml)).map((e) => [e.rule, e.at])).toEqual([["teamfile.schema", "seats.__proto__"]]);
  });

  it("keeps an environment variable named like a prototype member", () => {
    const r = loadTeamFileData({ version: 1, team: "web", seats: { a: { start: { command: ["x"], env: { __proto__: "1", constructor: "2" } } } } });
    const direct = loadTeamFileText(`${HEAD}seats:\n  a:\n    start:\n      command: [x]\n      env:\n        __proto__: "1"\n        constructor: "2"\n`);
    if (!direct.ok) throw new Error(JSON.stringify(direct.errors));
    expect(Object.keys(direct.policy.seats.a?.start?.env ?? {})).toEqual(["__proto__", "constructor"]);
    expect(r.ok).toBe(true);
  });
});

describe("loading from disk", () => {
  const repo = mkdtempSync(path.join(tmpdir(), "teamd-teamfile-disk-"));
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it("reads start files relative to the repository root and reserves them", async () => {
    mkdirSync(path.join(repo, "prompts"));
    writeFileSync(path.join(repo, "prompts", "a.md"), "be careful\n");
    const file = path.join(repo, "teamd.yaml");
    writeFileSync(file, `${HEAD}seats:\n  a:\n    roles: [executor]\n    start:\n      command: [claude]\n      files: [prompts/a.md]\n`);
    const r = await loadTeamFile(file);
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(r.policy.reserved).toEqual({ teamFile: "teamd.yaml", startFiles: ["prompts/a.md"] });
    // sha-256 of "be careful\n".
    expect(r.startFiles["prompts/a.md"]).toBe("sha256:0f4cef448586e089a68c7ee834aa20551123bf4fc5f5831546d75ce57c3c2667");
    expect(r.policy.seats.a?.contextHash).toMatch(/^sha256:/);
  });

  it("refuses a start file that does not exist, at its line", async () => {
    const file = path.join(repo, "teamd.yaml");
    writeFileSync(file, `${HEAD}seats:\n  a:\n    start:\n      command: [claude]\n      files:\n        - prompts/missing.md\n`);
    const errors = errorsOf(await loadTeamFile(file));
    expect(errors.map((e) => [e.rule, e.line])).toEqual([["teamfile.schema", 8]]);
  });
});

describe("restoring the policy in force from its record", () => {
  it("the canonical form loads again to the same policy, with the recorded start-file hashes", () => {
    const yaml = `${HEAD}review: { mode: cross-lab, floor: 1 }\ndeclare:\n  branches: [main, "release/*"]\nroles:\n  r:\n    template: verifier\n    scope: { path: src/, branch: main }\nseats:\n  a:\n    roles: [r]\n    capabilities:\n      write: { path: . }\n      read: ~\n      merge: { path: [], branch: main }\n    start:\n      command: [claude]\n      env: { A: "1" }\n      files: [CLAUDE.md]\n`;
    const applied = loadTeamFileText(yaml, { readStartFile: () => new TextEncoder().encode("v1") });
    if (!applied.ok) throw new Error(JSON.stringify(applied.errors));
    // Later the file on disk changed; the record (canonical form + start-file hashes) is what is in force.
    const restored = loadTeamFileData(JSON.parse(applied.canonical), {
      startFileHashes: applied.startFiles,
      readStartFile: () => new TextEncoder().encode("v2"),
    });
    if (!restored.ok) throw new Error(JSON.stringify(restored.errors));
    expect(restored.canonical).toBe(applied.canonical);
    expect(restored.hashes).toEqual(applied.hashes);
    expect(restored.policy).toEqual(applied.policy);
  });

  it("a recorded hash that is missing cannot be invented", () => {
    const data = { version: 1, team: "web", seats: { a: { start: { command: ["x"], files: ["A.md"] } } } };
    expect(errorsOf(loadTeamFileData(data, { startFileHashes: {} })).map((e) => e.rule)).toEqual(["teamfile.schema"]);
  });
});

describe("every error at once (issue 22)", () => {
  it("names an unreadable start file alongside the seat's other errors, not only after they are fixed", () => {
    const text = `version: 1
team: web
declare:
  labs: [anthropic]
seats:
  a:
    lab: anthropic
    roles: [nosuchrole]
    start:
      command: [claude]
      files: [MISSING.md, PRESENT.md]
      limits: { memory: lots }
`;
    const result = loadTeamFileText(text, { readStartFile: (file) => (file === "PRESENT.md" ? Buffer.from("x") : undefined) });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const messages = result.errors.map((e) => `${e.line}: ${e.message}`);
    expect(messages).toEqual([
      "8: role 'nosuchrole' is not defined",
      "11: start file 'MISSING.md' cannot be read, so it cannot be pinned",
      "12: memory: 'lots' is not a size",
    ]);
  });
});
