import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/sandbox/plan.js";
import { bwrapArgs } from "../../src/sandbox/bwrap-args.js";
import type { MountOp, PlanInput, SandboxPlan } from "../../src/sandbox/plan-types.js";
import type { RuleId } from "../../src/kernel/rules.js";
import { isRuleId } from "../../src/kernel/rules.js";
import { baseInput, facts, id, root } from "./support/plan-fixture.js";
import { expectGolden, json } from "./support/golden.js";

/**
 * The plan compiler (pure) as a table: each case changes the base seat and names either the
 * golden plan it must compile to or the rule that must refuse it.
 */
const SEATS = "/var/lib/teamd/teams/alpha/seats/builder";
const APP = "/home/owner/projects/app";

function plan(input: PlanInput): SandboxPlan {
  const result = compilePlan(input);
  if (result.decision !== "plan") throw new Error(`refused: ${result.rule}: ${result.reason}`);
  return result.plan;
}

const dests = (p: SandboxPlan, op: MountOp["op"]) => p.mounts.filter((m) => m.op === op).map((m) => m.dest);

describe("compilePlan: golden plans", () => {
  const golden: Array<[string, string, (input: PlanInput) => PlanInput]> = [
    ["the base seat", "plan-base", (input) => input],
    [
      "node outside /usr, no shim bundle, /lib64 a real folder, no limits",
      "plan-nvm-node",
      (input) => ({
        ...input,
        host: facts({
          node: "/opt/node-v20/bin/node",
          shimBundle: undefined,
          system: facts().system.map((e) => (e.path === "/lib64" ? { path: "/lib64", kind: "dir" as const } : e)),
        }),
        limits: "none",
      }),
    ],
    [
      "a read-only root holding sockets, another name of a reserved file, and files linked from outside",
      "plan-masks",
      (input) => ({
        ...input,
        readOnly: [
          root(APP, 201, {
            sockets: [`${APP}/.devserver.sock`],
            aliases: [{ path: `${APP}/docs/team.yaml`, of: `${APP}/teamd.yaml` }],
            linked: [
              { path: `${APP}/vendor/big.bin`, key: "2049:777", nlink: 2 },
              { path: `${APP}/a/same.txt`, key: "2049:778", nlink: 2 },
              { path: `${APP}/b/same.txt`, key: "2049:778", nlink: 2 },
            ],
          }),
        ],
        writable: { ...input.writable, home: root(`${SEATS}/home`, 102, { sockets: [`${SEATS}/home/.tmux.sock`] }) },
      }),
    ],
  ];
  it.each(golden)("%s", (_what, name, change) => {
    const p = plan(change(baseInput()));
    expectGolden(`${name}.json`, json(p));
    const argv = bwrapArgs(p, ["/usr/bin/node", "/run/teamd/shim/agent.mjs"]);
    if (!argv.ok) throw new Error(argv.refusal.reason);
    expectGolden(`${name}.argv.json`, json(argv.value));
  });
});

describe("compilePlan: what the base plan holds", () => {
  const p = plan(baseInput());

  it("never binds / and builds the root from named system paths", () => {
    expect(p.mounts.some((m) => (m.op === "ro-bind" || m.op === "bind") && m.src === "/")).toBe(false);
    expect(dests(p, "ro-bind").slice(0, 1)).toEqual(["/usr"]);
    expect(dests(p, "symlink")).toEqual(expect.arrayContaining(["/bin", "/sbin", "/lib", "/lib64"]));
    expect(p.mounts.at(-1)).toEqual({ op: "remount-ro", dest: "/" });
  });

  it("binds /etc entry by entry without its secrets, sockets or teamd's own config", () => {
    const etc = p.mounts.filter((m) => m.dest.startsWith("/etc/")).map((m) => m.dest);
    expect(etc).toEqual(expect.arrayContaining(["/etc/passwd", "/etc/group", "/etc/hosts", "/etc/ssh/ssh_config", "/etc/ssl/certs", "/etc/ssl/openssl.cnf"]));
    for (const secret of [
      "/etc/shadow",
      "/etc/shadow-",
      "/etc/gshadow",
      "/etc/sudoers",
      "/etc/sudoers.d",
      "/etc/ssh/ssh_host_ed25519_key",
      "/etc/ssh/ssh_host_ed25519_key.pub",
      "/etc/ssl/private",
      "/etc/teamd",
      "/etc/initctl",
      "/etc/ssh",
      "/etc/ssl",
    ]) {
      expect(etc).not.toContain(secret);
    }
    expect(p.mounts).toContainEqual({ op: "symlink", target: "/usr/share/zoneinfo/Etc/UTC", dest: "/etc/localtime" });
  });

  it("gives a fresh /run, the run's own tmp folder at /tmp, its own /proc, a minimal /dev, and the seat socket at /run/teamd/shim.sock", () => {
    expect(dests(p, "tmpfs")).toEqual(["/run"]);
    expect(p.mounts.filter((m) => m.op === "bind" && m.dest === "/tmp")).toHaveLength(1);
    expect(dests(p, "proc")).toEqual(["/proc"]);
    expect(dests(p, "dev")).toEqual(["/dev"]);
    expect(p.mounts).toContainEqual({ op: "bind", src: "/var/lib/teamd/run/seats/alpha.builder.sock", dest: "/run/teamd/shim.sock" });
    const run = p.mounts.findIndex((m) => m.op === "tmpfs" && m.dest === "/run");
    const socket = p.mounts.findIndex((m) => m.dest === "/run/teamd/shim.sock");
    expect(run).toBeLessThan(socket); // notes/stack.md pitfall 3
  });

  it("binds the writable roots read-write and the read scope read-only, nothing else of the owner's", () => {
    expect(p.mounts.filter((m) => m.op === "bind").map((m) => m.dest)).toEqual([
      "/tmp",
      `${SEATS}/home`,
      `${SEATS}/repo`,
      `${SEATS}/tmp`,
      "/run/teamd/shim.sock",
    ]);
    expect(p.mounts).toContainEqual({ op: "ro-bind", src: APP, dest: APP });
    const owner = p.mounts.filter((m) => m.dest.startsWith("/home/owner") && m.op !== "mask");
    expect(owner).toEqual([{ op: "ro-bind", src: APP, dest: APP }]);
  });

  it("masks reserved objects inside bound folders and binds none of them", () => {
    expect(p.mounts.filter((m) => m.op === "mask").map((m) => [m.dest, m.op === "mask" ? m.kind : ""])).toEqual([
      [`${APP}/.git`, "dir"],
      [`${APP}/teamd.yaml`, "file"],
      ["/usr/lib/node_modules/teamd", "dir"],
    ]);
    for (const object of baseInput().reserved) expect(p.sources).not.toContain(object.path);
  });

  it("sets exactly the allowlisted, declared and teamd's own variables", () => {
    expect(p.env).toEqual({
      HOME: `${SEATS}/home`,
      LANG: "en_US.UTF-8",
      PATH: `/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:${SEATS}/home/.local/bin`,
      PWD: `${SEATS}/repo`,
      RUST_LOG: "info",
      TEAMD_SEAT: "builder",
      TEAMD_SHIM: "/run/teamd/shim",
      TEAMD_SOCKET: "/run/teamd/shim.sock",
      TEAMD_TEAM: "alpha",
      TEAMD_TMP: `${SEATS}/tmp`,
      TERM: "xterm-256color",
      TMPDIR: `${SEATS}/tmp`,
    });
  });

  it("is deterministic and frozen", () => {
    expect(json(plan(baseInput()))).toBe(json(p));
    expect(Object.isFrozen(p.mounts)).toBe(true);
    expect(Object.isFrozen(p.mounts[0])).toBe(true);
  });
});

describe("compilePlan: cases", () => {
  it("drops a read-only root that is also writable, and keeps a read-only root nested in a writable one read-only", () => {
    const input = baseInput();
    const p = plan({ ...input, readOnly: [root(`${SEATS}/repo`, 101), root(`${SEATS}/repo/vendor`, 120)] });
    expect(p.mounts.filter((m) => m.dest.startsWith(`${SEATS}/repo`))).toEqual([
      { op: "bind", src: `${SEATS}/repo`, dest: `${SEATS}/repo` },
      { op: "ro-bind", src: `${SEATS}/repo/vendor`, dest: `${SEATS}/repo/vendor` },
    ]);
  });

  it("does not mask a multiply-linked file whose every name is inside the seat", () => {
    const input = baseInput();
    const linked = [
      { path: `${SEATS}/repo/a`, key: "2049:5", nlink: 2 },
      { path: `${SEATS}/repo/b`, key: "2049:5", nlink: 2 },
    ];
    const p = plan({ ...input, writable: { ...input.writable, repository: root(`${SEATS}/repo`, 101, { linked }) } });
    expect(dests(p, "mask")).not.toContain(`${SEATS}/repo/a`);
  });

  it("drops a mask under a masked folder", () => {
    const input = baseInput();
    const p = plan({ ...input, reserved: [...input.reserved, { path: `${APP}/.git/config`, id: id(999), kind: "file" }] });
    expect(dests(p, "mask")).not.toContain(`${APP}/.git/config`);
    expect(dests(p, "mask")).toContain(`${APP}/.git`);
  });

  it("binds teamd's login profile at /etc/profile in place of the host's, so a login shell keeps the seat's PATH", () => {
    const at = (q: SandboxPlan) => q.mounts.filter((m) => m.dest === "/etc/profile");
    expect(at(plan(baseInput()))).toEqual([{ op: "ro-bind", src: "/etc/profile", dest: "/etc/profile", copyable: true }]);
    const seatProfile = "/var/lib/teamd/shim/seat-profile-0123456789abcdef.sh";
    expect(at(plan({ ...baseInput(), host: facts({ seatProfile }) }))).toEqual([{ op: "ro-bind", src: seatProfile, dest: "/etc/profile" }]);
    // Also where the host has none.
    const noProfile = facts({ seatProfile }).etc.filter((e) => e.name !== "profile");
    expect(at(plan({ ...baseInput(), host: facts({ seatProfile, etc: noProfile }) }))).toEqual([{ op: "ro-bind", src: seatProfile, dest: "/etc/profile" }]);
  });

  it("binds the shim's lazy part read-only beside the shim, after it; none when the host facts name none", () => {
    const shimLazy = "/var/lib/teamd/shim/teamd-shim-0123456789abcdef.cjs.lazy";
    const q = plan({ ...baseInput(), host: facts({ shimLazy }) });
    const shim = q.mounts.findIndex((m) => m.dest === "/run/teamd/shim");
    const lazy = q.mounts.findIndex((m) => m.dest === "/run/teamd/shim.lazy");
    expect(q.mounts[lazy]).toEqual({ op: "ro-bind", src: shimLazy, dest: "/run/teamd/shim.lazy" });
    expect(lazy).toBeGreaterThan(shim);
    expect(plan(baseInput()).mounts.some((m) => m.dest === "/run/teamd/shim.lazy")).toBe(false);
  });

  it("binds the remote helper's front read-only beside the shim, and git-remote-teamd on PATH links to it; to the shim where there is none", () => {
    const shimGitRemote = "/var/lib/teamd/shim/teamd-shim-0123456789abcdef.cjs.git-remote";
    const q = plan({ ...baseInput(), host: facts({ shimGitRemote, shimCommand: "teamd-shim" }) });
    expect(q.mounts.filter((m) => m.dest === "/run/teamd/git-remote-teamd")).toEqual([
      { op: "ro-bind", src: shimGitRemote, dest: "/run/teamd/git-remote-teamd" },
    ]);
    const links = (p: SandboxPlan) => p.mounts.filter((m) => m.op === "symlink" && m.dest.startsWith("/run/teamd/bin/"));
    expect(links(q)).toEqual([
      { op: "symlink", target: "/run/teamd/shim", dest: "/run/teamd/bin/teamd-shim" },
      { op: "symlink", target: "/run/teamd/git-remote-teamd", dest: "/run/teamd/bin/git-remote-teamd" },
    ]);
    const without = plan({ ...baseInput(), host: facts({ shimCommand: "teamd-shim" }) });
    expect(without.mounts.some((m) => m.dest === "/run/teamd/git-remote-teamd")).toBe(false);
    expect(links(without)).toEqual([
      { op: "symlink", target: "/run/teamd/shim", dest: "/run/teamd/bin/teamd-shim" },
      { op: "symlink", target: "/run/teamd/shim", dest: "/run/teamd/bin/git-remote-teamd" },
    ]);
  });

  it("binds each pinned start file read-only over its path in the seat's repository, after the repository itself", () => {
    const input = baseInput();
    const repo = input.writable.repository.path;
    const src = "/var/lib/teamd/shim/pin-644-0123456789abcdef";
    const q = plan({ ...input, pins: [{ src, dest: `${repo}/src/AGENTS.md` }] });
    const at = q.mounts.findIndex((m) => m.dest === `${repo}/src/AGENTS.md`);
    expect(q.mounts[at]).toEqual({ op: "ro-bind", src, dest: `${repo}/src/AGENTS.md` });
    expect(q.mounts.findIndex((m) => m.op === "bind" && m.dest === repo)).toBeLessThan(at);
    // Each folder between the repository and the pin is bound onto itself first, so the running
    // seat can rename none of them (a mount point): the path an exec binds again stays the file.
    const folder = q.mounts.findIndex((m) => m.op === "bind" && m.src === `${repo}/src` && m.dest === `${repo}/src`);
    expect(folder).toBeGreaterThan(q.mounts.findIndex((m) => m.op === "bind" && m.dest === repo));
    expect(folder).toBeLessThan(at);
    const deep = plan({
      ...input,
      pins: [
        { src, dest: `${repo}/a/b/AGENTS.md` },
        { src, dest: `${repo}/a/OTHER.md` },
      ],
    });
    expect(deep.mounts.filter((m) => m.op === "bind" && m.src === m.dest && m.dest.startsWith(`${repo}/`)).map((m) => m.dest)).toEqual([
      `${repo}/a`,
      `${repo}/a/b`,
    ]);
  });

  it("binds the seat's last handoff checkpoint read-only at /run/teamd/handoff.json, named by TEAMD_HANDOFF, only when it has one", () => {
    const src = "/var/lib/teamd/handoffs/proj/w/0123456789abcdef.json";
    const q = plan({ ...baseInput(), handoff: src });
    expect(q.mounts.filter((m) => m.dest === "/run/teamd/handoff.json")).toEqual([{ op: "ro-bind", src, dest: "/run/teamd/handoff.json" }]);
    expect(q.env.TEAMD_HANDOFF).toBe("/run/teamd/handoff.json");
    const none = plan(baseInput());
    expect(none.mounts.map((m) => m.dest)).not.toContain("/run/teamd/handoff.json");
    expect(none.env.TEAMD_HANDOFF).toBeUndefined();
  });

  it("leaves out an /etc entry that is reserved", () => {
    const input = baseInput();
    const host = facts({ etc: [...facts().etc, { name: "owner-key.pem", kind: "file" }] });
    const p = plan({ ...input, host, reserved: [...input.reserved, { path: "/etc/owner-key.pem", id: id(998), kind: "file" }] });
    expect(p.mounts.map((m) => m.dest)).not.toContain("/etc/owner-key.pem");
  });

  type Change = (input: PlanInput) => PlanInput;
  const writable =
    (which: "repository" | "home" | "tmp", r: ReturnType<typeof root>): Change =>
    (input) => ({ ...input, writable: { ...input.writable, [which]: r } });
  const refusals: Array<[string, Change, RuleId, RegExp]> = [
    ["a writable root that is a reserved path", writable("repository", root("/var/lib/teamd/hubs/alpha.git", 101)), "reserved.object", /is the reserved/],
    [
      "a writable root that lies under a reserved path",
      writable("home", root("/var/lib/teamd/ledger/seat-home", 102)),
      "reserved.object",
      /lies under the reserved/,
    ],
    ["a writable root that contains a reserved path", writable("home", root("/var/lib/teamd", 102)), "reserved.object", /contains the reserved/],
    [
      "a writable root that contains a reserved path that does not exist yet",
      (i) => ({ ...i, reserved: [{ path: `${SEATS}/tmp/flags`, id: undefined, kind: "absent" }] }),
      "reserved.object",
      /contains the reserved .*\/tmp\/flags/,
    ],
    [
      "a writable root that is a reserved object under another name",
      writable("repository", root("/srv/alias-of-hub", 303)),
      "reserved.object",
      /same object as the reserved \/var\/lib\/teamd\/hubs\/alpha.git/,
    ],
    [
      "a writable root holding another name of a reserved object",
      writable("repository", root(`${SEATS}/repo`, 101, { aliases: [{ path: `${SEATS}/repo/leak`, of: "/var/lib/teamd/keys" }] })),
      "reserved.object",
      /another name of the reserved \/var\/lib\/teamd\/keys/,
    ],
    ["a read-only root that is a reserved path", (i) => ({ ...i, readOnly: [root(`${APP}/.git`, 304)] }), "reserved.object", /is the reserved/],
    ["a read-only root under a reserved path", (i) => ({ ...i, readOnly: [root(`${APP}/.git/objects`, 410)] }), "reserved.object", /lies under/],
    ["a read-only root with the identity of a reserved object", (i) => ({ ...i, readOnly: [root("/mnt/ledger-copy", 301)] }), "reserved.object", /same object/],
    [
      "a root whose scan did not finish",
      (i) => ({ ...i, readOnly: [root(APP, 201, { complete: false, incomplete: "more than 500000 entries" })] }),
      "reserved.link-set",
      /could not be scanned completely \(more than 500000 entries\)/,
    ],
    [
      "a scan of another folder",
      (i) => ({ ...i, readOnly: [{ ...root(APP, 201), scan: { ...root("/elsewhere", 1).scan } }] }),
      "containment.undecidable",
      /is of \/elsewhere/,
    ],
    ["a relative root", writable("repository", root("repo", 101)), "containment.undecidable", /not canonical/],
    ["a root with ..", writable("repository", root(`${SEATS}/../x`, 101)), "containment.undecidable", /not canonical/],
    ["a root with a trailing slash", writable("repository", root(`${SEATS}/repo/`, 101)), "containment.undecidable", /not canonical/],
    ["a root of /", (i) => ({ ...i, readOnly: [root("/", 2)] }), "containment.undecidable", /bind the whole host/],
    ["a root over a system path", (i) => ({ ...i, readOnly: [root("/usr", 2)] }), "containment.undecidable", /system path \/usr/],
    ["a root under /proc", (i) => ({ ...i, readOnly: [root("/proc/1/root", 2)] }), "containment.undecidable", /overlaps \/proc/],
    ["a root under /run", writable("tmp", root("/run/user/998", 103)), "containment.undecidable", /overlaps \/run/],
    ["a root under /etc", (i) => ({ ...i, readOnly: [root("/etc/app", 2)] }), "containment.undecidable", /overlaps \/etc/],
    ["a root under a system symlink", (i) => ({ ...i, readOnly: [root("/lib/app", 2)] }), "containment.undecidable", /symlink \/lib/],
    ["the same folder as two writable roots", writable("home", root(`${SEATS}/repo`, 101)), "containment.undecidable", /same folder/],
    ["uid 0", (i) => ({ ...i, user: { uid: 0, gid: 998 } }), "containment.host-root", /never runs as root/],
    ["gid 0", (i) => ({ ...i, user: { uid: 998, gid: 0 } }), "containment.host-root", /never runs as root/],
    ["a negative uid", (i) => ({ ...i, user: { uid: -1, gid: 998 } }), "containment.undecidable", /not user ids/],
    ["a seat name with a slash", (i) => ({ ...i, seat: { team: "alpha", seat: "../x" } }), "containment.undecidable", /not a plain name/],
    [
      "no fact about a system path",
      (i) => ({ ...i, host: facts({ system: facts().system.filter((e) => e.path !== "/lib32") }) }),
      "containment.undecidable",
      /\/lib32/,
    ],
    [
      "no /usr on the host",
      (i) => ({ ...i, host: facts({ system: facts().system.map((e) => (e.path === "/usr" ? { path: "/usr", kind: "absent" as const } : e)) }) }),
      "containment.undecidable",
      /\/usr does not exist/,
    ],
    [
      "a system path that is neither folder nor symlink",
      (i) => ({ ...i, host: facts({ system: facts().system.map((e) => (e.path === "/sbin" ? { path: "/sbin", kind: "other" as const } : e)) }) }),
      "containment.undecidable",
      /neither a folder/,
    ],
    [
      "a system symlink without a target",
      (i) => ({ ...i, host: facts({ system: facts().system.map((e) => (e.path === "/bin" ? { path: "/bin", kind: "symlink" as const } : e)) }) }),
      "containment.undecidable",
      /target is not known/,
    ],
    ["a reserved system path", (i) => ({ ...i, reserved: [...i.reserved, { path: "/usr", id: id(5), kind: "dir" }] }), "reserved.object", /system path \/usr/],
    ["/etc/ssh whose children were not listed", (i) => ({ ...i, host: facts({ etcListed: ["ssl"] }) }), "containment.undecidable", /\/etc\/ssh holds entries/],
    [
      "/etc/ssl as a symlink",
      (i) => ({
        ...i,
        host: facts({ etc: facts().etc.map((e) => (e.name === "ssl" ? { name: "ssl", kind: "symlink" as const, target: "/usr/lib/ssl" } : e)) }),
      }),
      "containment.undecidable",
      /symlink, so the secrets inside it/,
    ],
    [
      "an /etc entry that climbs out",
      (i) => ({ ...i, host: facts({ etc: [...facts().etc, { name: "../root", kind: "file" as const }] }) }),
      "containment.undecidable",
      /not a plain name/,
    ],
    [
      "a seat socket that is a reserved path",
      (i) => ({ ...i, host: facts({ seatSocket: { path: "/var/lib/teamd/keys", id: id(1234) } }) }),
      "reserved.object",
      /seat socket/,
    ],
    [
      "a seat socket that is a reserved object",
      (i) => ({ ...i, host: facts({ seatSocket: { path: "/var/lib/teamd/run/control.sock", id: id(302) } }) }),
      "reserved.object",
      /seat socket/,
    ],
    [
      "a shim bundle inside teamd's reserved code",
      (i) => ({ ...i, host: facts({ shimBundle: "/usr/lib/node_modules/teamd/dist/shim.mjs" }) }),
      "reserved.object",
      /shim bundle/,
    ],
    [
      "a shim's lazy part inside teamd's reserved code",
      (i) => ({ ...i, host: facts({ shimLazy: "/usr/lib/node_modules/teamd/dist/shim-bundle/teamd-shim.cjs.lazy" }) }),
      "reserved.object",
      /shim's lazy part/,
    ],
    [
      "a shim's lazy part under /run, which the plan builds itself",
      (i) => ({ ...i, host: facts({ shimLazy: "/run/teamd/shim.lazy" }) }),
      "containment.undecidable",
      /shim's lazy part \/run\/teamd\/shim.lazy lies under \/run/,
    ],
    [
      "a remote helper's front inside teamd's reserved code",
      (i) => ({ ...i, host: facts({ shimGitRemote: "/usr/lib/node_modules/teamd/dist/shim-bundle/teamd-shim.cjs.git-remote" }) }),
      "reserved.object",
      /remote helper's front/,
    ],
    [
      "a remote helper's front under /run, which the plan builds itself",
      (i) => ({ ...i, host: facts({ shimGitRemote: "/run/teamd/git-remote-teamd" }) }),
      "containment.undecidable",
      /remote helper's front \/run\/teamd\/git-remote-teamd lies under \/run/,
    ],
    [
      "a shim's lazy part at a path that is not canonical",
      (i) => ({ ...i, host: facts({ shimLazy: "/var/lib/teamd/shim/../shim/x.lazy" }) }),
      "containment.undecidable",
      /shim's lazy part path .* is not canonical/,
    ],
    [
      "a pinned start file bound outside the seat's repository",
      (i) => ({ ...i, pins: [{ src: "/var/lib/teamd/shim/pin-644-x", dest: "/etc/passwd" }] }),
      "containment.undecidable",
      /pinned start file \/etc\/passwd is not inside the seat's repository/,
    ],
    [
      "a pinned start file bound over the seat's repository itself",
      (i) => ({ ...i, pins: [{ src: "/var/lib/teamd/shim/pin-644-x", dest: i.writable.repository.path }] }),
      "containment.undecidable",
      /not inside the seat's repository/,
    ],
    [
      "a pinned start file's copy inside a reserved folder",
      (i) => ({ ...i, pins: [{ src: "/var/lib/teamd/keys/pin", dest: `${i.writable.repository.path}/AGENTS.md` }] }),
      "reserved.object",
      /pinned start file/,
    ],
    [
      "a handoff checkpoint's copy inside a reserved folder",
      (i) => ({ ...i, handoff: "/var/lib/teamd/keys/handoff.json" }),
      "reserved.object",
      /handoff checkpoint/,
    ],
    [
      "a seat profile inside a reserved folder",
      (i) => ({ ...i, host: facts({ seatProfile: "/var/lib/teamd/keys/profile.sh" }) }),
      "reserved.object",
      /seat profile/,
    ],
    ["a node runtime inside a reserved folder", (i) => ({ ...i, host: facts({ node: "/var/lib/teamd/keys/node" }) }), "reserved.object", /node runtime/],
    ["a node runtime under /etc", (i) => ({ ...i, host: facts({ node: "/etc/alternatives/node" }) }), "containment.undecidable", /node runtime/],
    [
      "a reserved object that is a symlink",
      (i) => ({ ...i, reserved: [...i.reserved, { path: "/var/lib/teamd/link", id: id(77), kind: "symlink" }] }),
      "containment.undecidable",
      /symlink/,
    ],
    ["a declared HOME", (i) => ({ ...i, env: { ...i.env, declared: { HOME: "/root" } } }), "containment.env", /HOME, which teamd sets/],
    ["a declared TEAMD_ variable", (i) => ({ ...i, env: { ...i.env, declared: { TEAMD_SOCKET_X: "x" } } }), "containment.env", /TEAMD_SOCKET_X/],
    ["an allowlisted PATH", (i) => ({ ...i, env: { ...i.env, allowlist: ["PATH"] } }), "containment.env", /PATH, which teamd sets/],
    ["an invalid variable name", (i) => ({ ...i, env: { ...i.env, declared: { "A=B": "x" } } }), "containment.env", /not a valid environment variable name/],
    ["a NUL in a value", (i) => ({ ...i, env: { ...i.env, declared: { X: "a\u0000b" } } }), "containment.env", /NUL/],
    ["an unknown limit", (i) => ({ ...i, limits: { gpus: 1 } as never }), "containment.limit", /gpus/],
    ["a limit that is not a positive whole number", (i) => ({ ...i, limits: { memoryBytes: -5 } }), "containment.limit", /memoryBytes/],
    ["an input missing its host facts", (i) => ({ ...i, host: undefined as never }), "containment.undecidable", /could not be read/],
  ];
  it.each(refusals)("refuses %s", (_what, change, rule, reason) => {
    const result = compilePlan(change(baseInput()));
    expect(result.decision).toBe("refuse");
    if (result.decision !== "refuse") return;
    expect(result.rule).toBe(rule);
    expect(result.reason).toMatch(reason);
    expect(isRuleId(result.rule)).toBe(true);
    expect((result as { fix?: string }).fix).toEqual(expect.any(String));
  });
});
