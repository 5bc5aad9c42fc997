import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { HELP_TEXT_FILE } from "../../daemon/help-text.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempHome, ROOT, startDaemon, TEAMD_UNBUNDLED, type DaemonProcess } from "../support/programs.js";

/**
 * npm's `teamd` is the CLI's front bundled into one CommonJS file (dist/bin/teamd.cjs,
 * scripts/build-shim.ts, issue 26), which imports each command from dist/ when it runs. It must
 * be the same program as dist/daemon/main.js: the same text, the same exit codes — a command's
 * error, thrown by dist/'s copy of src/rpc/errors.ts, keeps its exit code though the bundle's
 * runCli holds another copy (exit 4 for an unreachable daemon, not 1).
 */
const BUNDLE = join(ROOT, "dist/bin/teamd.cjs");
const TEAMD = TEAMD_UNBUNDLED;

function run(program: string, args: readonly string[], home = "/nonexistent/teamd-cli-bundle") {
  const r = spawnSync(process.execPath, [program, ...args], {
    encoding: "utf8",
    env: { ...process.env, TEAMD_HOME: home },
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the bundled teamd", () => {
  it.each([
    [["--version"]],
    [["--help"]],
    [["lease", "--help"]],
    [["exec", "--help"]],
    [["no-such-command"]],
    // Typos, answered by the front from the names the build read from the tree (and commander's own suggestion).
    [["stauts"]],
    [["aply"]],
    [["x"]],
    [["leases"]],
    [["no-such-command", "extra"]],
    [["log", "some-seat"]],
    [["stop", "--all", "some-seat"]],
    [["status", "--socket", "/nonexistent/teamd-cli-bundle/control.sock"]],
    [["status", "--json", "--socket", "/nonexistent/teamd-cli-bundle/control.sock"]],
    [["lease", "list", "--team", "t"]],
    [["exec", "--json", "some-seat", "--", "true"]],
    // The owner bundle's commands (dist/bin/teamd-owner.cjs).
    [["log", "--json"]],
    [["create-bounds", "show"]],
    [["verify", "--json"]],
    [["kernel", "eval"]],
    [["stop", "--team", "t", "--json"]],
  ])("teamd %j: the same output and exit code as dist/daemon/main.js", (args) => {
    expect(run(BUNDLE, args)).toEqual(run(TEAMD, args));
  });

  it.each([[[]], [["--json"]]])("teamd status %j, taken straight to its act, answers as the command tree does with every option spelled out", (extra) => {
    const home = "/nonexistent/teamd-cli-bundle";
    for (const program of [BUNDLE, TEAMD]) {
      const direct = run(program, ["status", ...extra], home);
      expect(direct.code).toBe(4);
      expect(direct).toEqual(run(program, ["status", ...extra, "--socket", join(home, "run/control.sock")], home));
    }
  });

  it.each([[["sh", "-c", "true"]], [["--", "true"]], [["--help"]]])(
    "teamd exec SEAT -- %j, taken straight to its act, answers as the command tree does with an option spelled out",
    (command) => {
      const home = "/nonexistent/teamd-cli-bundle";
      for (const program of [BUNDLE, TEAMD]) {
        const direct = run(program, ["exec", "some-seat", "--", ...command], home);
        expect(direct.code).toBe(4);
        // --timeout 60 is the default: the same act, through the command tree.
        expect(direct).toEqual(run(program, ["exec", "some-seat", "--timeout", "60", "--", ...command], home));
      }
    },
  );

  it.each([[["exec", "--team", "t", "--", "true"]], [["exec", "-t", "--", "true"]], [["exec", "some-seat", "--"]], [["exec", "some-seat", "true"]]])(
    "teamd %j is the command tree's to parse (an option where the seat would be, no command, no `--`)",
    (args) => {
      expect(run(BUNDLE, args)).toEqual(run(TEAMD, args));
      expect(run(BUNDLE, args).code).not.toBe(0);
    },
  );

  it.each([[["status", "--jsn"]], [["status", "extra"]], [["status", "--help"]]])("teamd %j is the command tree's to parse (usage, help)", (args) => {
    const r = run(BUNDLE, args);
    expect(r.code).toBe(args[1] === "--help" ? 0 : 2);
    expect(r.stdout + r.stderr).toMatch(args[1] === "--help" ? /Usage: teamd status/ : /unknown option|too many arguments/);
  });

  it("teamd --version and -V, printed by the front, are the command tree's version; --help and -h to a pipe are the tree's help, rendered by the build", async () => {
    const { buildProgram } = (await import(join(ROOT, "dist/daemon/cli.js"))) as { buildProgram(): { version(): string | undefined } };
    for (const flag of ["--version", "-V"]) expect(run(BUNDLE, [flag])).toEqual({ code: 0, stdout: `${buildProgram().version() ?? ""}\n`, stderr: "" });
    // The unbundled front has no rendered help beside it: its --help is the tree's. So is any other argv.
    for (const flag of ["--help", "-h"]) expect(run(BUNDLE, [flag])).toEqual(run(TEAMD, [flag]));
    expect(run(BUNDLE, ["--help"]).stdout).toBe(readFileSync(join(ROOT, "dist/bin", HELP_TEXT_FILE), "utf8"));
    // A colour variable, as a terminal would, sends it to the tree, which prints the same here.
    const forced = spawnSync(process.execPath, [BUNDLE, "--help"], { encoding: "utf8", env: { ...process.env, FORCE_COLOR: "0" } });
    expect(forced.stdout).toBe(run(TEAMD, ["--help"]).stdout);
  });

  it("teamd WORD, no command, is answered by the front without the command tree; a colour variable or a word to escape goes to the tree", () => {
    const tree = (args: readonly string[], env: Record<string, string> = {}) => {
      const r = spawnSync(process.execPath, [BUNDLE, ...args], { encoding: "utf8", env: { ...process.env, ...env, NODE_DEBUG: "module" }, timeout: 20_000 });
      return { code: r.status, tree: r.stderr.includes("teamd-tree.cjs") };
    };
    expect(tree(["stauts"])).toEqual({ code: 2, tree: false });
    expect(tree(["stauts"], { FORCE_COLOR: "0" })).toEqual({ code: 2, tree: true });
    expect(tree(["st\u001bauts"])).toEqual({ code: 2, tree: true });
    // A command's own name is never the front's to refuse.
    expect(tree(["help"]).tree).toBe(true);
  });

  it("a command's error keeps its exit code through the bundle: an unreachable daemon is 4", () => {
    const r = run(BUNDLE, ["lease", "list", "--team", "t"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("cannot reach the teamd daemon");
  });
});

/**
 * A stack through a command bundle names the source, not the bundle: the owner bundle's
 * kernel-eval, given no list of files, throws inside it.
 */
describe("the command bundles' stack traces", () => {
  it.each([["dist/bin/teamd-owner.cjs", "commands/kernel-eval", "kernelEval", "daemon/commands/kernel-eval.ts"]])(
    "%s: a throw inside %s names %s's source file and line",
    (bundle, entry, fn, source) => {
      const program = [
        `const { loadBundle } = await import(${JSON.stringify(join(ROOT, "dist/src/rpc/bundle-loader.js"))});`,
        `const commands = loadBundle(${JSON.stringify(join(ROOT, bundle))});`,
        `try { await commands[${JSON.stringify(entry)}]()[${JSON.stringify(fn)}](null, {}); } catch (error) { process.stdout.write(error.stack); }`,
      ].join("\n");
      const r = spawnSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8", timeout: 20_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^TypeError: /);
      expect(r.stdout.split("\n")[1]).toContain(`${fn} (${join(ROOT, source)}:`);
      expect(r.stdout).not.toContain(bundle);
    },
  );

  it("dist/bin/teamd-tree.cjs: a refusal thrown by a command's action in the tree names daemon/cli.ts and its line", () => {
    const bundle = "dist/bin/teamd-tree.cjs";
    const program = [
      `const { loadBundle } = await import(${JSON.stringify(join(ROOT, "dist/src/rpc/bundle-loader.js"))});`,
      `const tree = loadBundle(${JSON.stringify(join(ROOT, bundle))});`,
      // teamd log takes no seat: its action throws a UsageError before it loads anything.
      `try { await tree.buildProgram().parseAsync(["node", "teamd", "log", "some-seat"]); } catch (error) { process.stdout.write(error.stack); }`,
    ].join("\n");
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8", timeout: 20_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^UsageError: teamd log is the ledger's records/);
    expect(r.stdout.split("\n")[1]).toContain(`${join(ROOT, "daemon/cli.ts")}:`);
    expect(r.stdout).not.toContain(bundle);
  });
});

/** The client commands come from a second bundle (dist/bin/teamd-client.cjs): the same answers from a real daemon. */
describe("the bundled teamd against a daemon", () => {
  let home: { dir: string; remove(): Promise<void> };
  let daemon: DaemonProcess;
  beforeAll(async () => {
    home = await makeTempHome("teamd-cli-bundle-");
    daemon = await startDaemon(home.dir);
  });
  afterAll(async () => {
    await daemon?.stop();
    await home?.remove();
  });

  it("teamd status --json: the same fields and exit code", () => {
    const bundled = run(BUNDLE, ["status", "--json"], home.dir);
    const plain = run(TEAMD, ["status", "--json"], home.dir);
    expect(bundled.code).toBe(0);
    expect(plain.code).toBe(0);
    expect(Object.keys(JSON.parse(bundled.stdout) as object)).toEqual(Object.keys(JSON.parse(plain.stdout) as object));
  });

  it.each([[["exec", "no-such-seat", "--", "true"]], [["stop", "no-such-seat"]], [["start", "no-such-seat"]]])(
    "teamd %j: the daemon's refusal, the same text and exit code",
    (args) => {
      const bundled = run(BUNDLE, args, home.dir);
      expect(bundled).toEqual(run(TEAMD, args, home.dir));
      expect(bundled.code).not.toBe(0);
    },
  );
});
