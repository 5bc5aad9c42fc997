import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { SHIM, TEAMD_UNBUNDLED } from "../support/programs.js";

/**
 * What `teamd` loads for a command that needs none of the daemon (issue 26): `--version`, `--help`
 * and a usage error parse argv and print, so they must not load grpc-js, the generated messages,
 * SQLite or the daemon's server — each costs start-up time a person waits for. A module hook
 * (node:module register) lists every module the ESM loader loads; the control, `teamd status`
 * against a socket that is not there, loads the client and proves the hook sees them. The hook
 * sees what the module loader loads, so these run tsc's output (dist/daemon/main.js): the bundled
 * program loads the same modules from its bundles.
 */
const TEAMD = TEAMD_UNBUNDLED;
const HOOKS = `export async function load(url, context, next) { process.stderr.write("LOADED " + url + "\\n"); return next(url, context); }`;
const REGISTER = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;

function loaded(args: readonly string[], program = TEAMD): { code: number | null; urls: string[] } {
  const r = spawnSync(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(REGISTER)}`, program, ...args], {
    encoding: "utf8",
    env: { ...process.env, TEAMD_HOME: "/nonexistent/teamd-cli-loading", TEAMD_SOCKET: "/nonexistent/teamd-cli-loading/shim.sock" },
    timeout: 20_000,
  });
  const urls = r.stderr
    .split("\n")
    .filter((line) => line.startsWith("LOADED "))
    .map((line) => line.slice("LOADED ".length));
  return { code: r.status, urls };
}

const HEAVY = [/@grpc\/grpc-js/, /@bufbuild\/protobuf/, /\/src\/gen\//, /better-sqlite3/, /node-pty/, /\/daemon\/server\//, /\/src\/ledger\//];

describe("teamd loads only what its command needs", () => {
  it.each([[["--version"]], [["--help"]], [["no-such-command"]], [["status", "--no-such-flag"]], [["lease", "--help"]]])(
    "teamd %j loads no gRPC, no generated code, no SQLite and no daemon",
    (args) => {
      const { urls } = loaded(args);
      // The control, that the hook sees what loads: the command tree — but for --version, which
      // the front prints without it (daemon/main.ts), and loads nothing past the front.
      if (args[0] === "--version") {
        expect(urls.some((url) => url.endsWith("/dist/daemon/main.js"))).toBe(true);
        expect(
          urls.filter((url) => url.includes("/dist/daemon/") && !/\/dist\/daemon\/(main|help-text|host\/(terminal-text|ambient|plain-text))\.js$/.test(url)),
        ).toEqual([]);
      } else expect(urls.some((url) => url.endsWith("/dist/daemon/cli.js"))).toBe(true);
      expect(urls.filter((url) => HEAVY.some((heavy) => heavy.test(url)))).toEqual([]);
    },
  );

  it.each([
    [["log", "--json"], "log"],
    [["create-bounds", "show"], "create-bounds"],
    [["stop", "--team", "t"], "stop-all"],
    [["apply", "--yes"], "apply"],
  ])("teamd %j, an owner command, loads its module (%s) and not grpc-js (the daemon's server)", (args, module) => {
    const { urls } = loaded(args);
    expect(urls.some((url) => url.endsWith(`/dist/daemon/commands/${module}.js`))).toBe(true);
    expect(urls.filter((url) => /@grpc\/grpc-js|\/src\/rpc\/server\.js|\/daemon\/server\//.test(url))).toEqual([]);
  });

  it("the control: teamd status loads the gRPC client and its messages (the hook sees them), and not grpc-js", () => {
    const { code, urls } = loaded(["status", "--socket", "/nonexistent/teamd-cli-loading/control.sock"]);
    expect(code).not.toBe(0);
    expect(urls.some((url) => url.endsWith("/dist/src/rpc/client.js"))).toBe(true);
    expect(urls.some((url) => /\/src\/gen\//.test(url))).toBe(true);
    // The client speaks gRPC over node:http2 (src/rpc/client.ts); grpc-js is the daemon's.
    expect(urls.filter((url) => /@grpc\/grpc-js/.test(url))).toEqual([]);
  });
});

/** The same discipline inside a seat: teamd-shim's --version, --help and a usage error load no gRPC (dist/shim/main.js, the bundle's source). */
describe("teamd-shim loads only what its command needs", () => {
  it.each([[["--version"]], [["--help"]], [["no-such-command"]]])("teamd-shim %j loads no gRPC and no generated code", (args) => {
    const { urls } = loaded(args, SHIM);
    expect(urls.some((url) => url.endsWith("/dist/shim/main.js"))).toBe(true);
    expect(urls.filter((url) => HEAVY.some((heavy) => heavy.test(url)))).toEqual([]);
  });

  it("the control: teamd-shim whoami loads the gRPC client and its messages, and not grpc-js", () => {
    const { code, urls } = loaded(["whoami"], SHIM);
    expect(code).not.toBe(0);
    expect(urls.some((url) => url.endsWith("/dist/src/rpc/client.js"))).toBe(true);
    expect(urls.some((url) => /\/src\/gen\//.test(url))).toBe(true);
    expect(urls.filter((url) => /@grpc\/grpc-js/.test(url))).toEqual([]);
  });

  it.each([[["whoami"]], [["whoami", "--json"]]])("teamd-shim %j goes straight to its act: no command tree, no commander, no other act", (args) => {
    const { urls } = loaded(args, SHIM);
    expect(urls.some((url) => url.endsWith("/dist/shim/whoami.js"))).toBe(true);
    expect(urls.filter((url) => url.endsWith("/dist/shim/cli.js") || url.endsWith("/dist/shim/commands.js") || /\/commander\//.test(url))).toEqual([]);
    // Its messages alone: none of shim.proto's others (whoami.proto, issue 26).
    expect(urls.some((url) => url.endsWith("/dist/src/gen/teamd/v1/whoami_pb.js"))).toBe(true);
    expect(urls.filter((url) => url.endsWith("/dist/src/gen/teamd/v1/shim_pb.js"))).toEqual([]);
  });

  it.each([[["whoami", "--jsn"]], [["whoami", "extra"]], [["whoami", "--help"]]])("teamd-shim %j, any other argv, is the command tree's to parse", (args) => {
    const r = loaded(args, SHIM);
    expect(r.urls.some((url) => url.endsWith("/dist/shim/cli.js"))).toBe(true);
    expect(r.code).toBe(args[1] === "--help" ? 0 : 2);
  });
});
