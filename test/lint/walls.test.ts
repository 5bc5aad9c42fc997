import { describe, expect, it } from "vitest";
import { ESLint } from "eslint";
import { join } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * The walls between teamd's folders (docs/development.md, "Rooms and walls") must fire on a
 * file that breaks them and stay quiet on one that keeps them. Each case lints source text as
 * if it lived at the given path, through the project's real eslint.config.js, and looks only
 * at teamd/walls messages (a fixture may break other rules: unused names and the like).
 */
const eslint = new ESLint({ cwd: ROOT });

async function walls(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === "teamd/walls").map((m) => m.message);
}

/** [wall, the file it is written as, its source, what the message must say] */
const broken: Array<[string, string, string, RegExp]> = [
  ["1: src/ imports daemon/", "src/ledger/x.ts", `export { resolveHome } from "../../daemon/host/home.js";`, /wall 1:/],
  ["1: src/ imports shim/", "src/rpc/x.ts", `import { main } from "../../shim/main.js";\nexport const m = main;`, /wall 1:/],
  ["1: by dynamic import", "src/effects/x.ts", `export const m = () => import("../../daemon/host/names.js");`, /wall 1:/],
  ["rooms: a room imports cli.ts", "daemon/server/x.ts", `import "../cli.js";`, /wall rooms:/],
  ["2: host/ imports owner/", "daemon/host/x.ts", `import type { OwnerChannel } from "../owner/channel.js";\nexport type C = OwnerChannel;`, /wall 2:/],
  ["3: commands/ imports server/", "daemon/commands/x.ts", `import "../server/daemon.js";`, /wall 3:/],
  ["3: commands/ imports seat/", "daemon/commands/x.ts", `import type { SeatPipeline } from "../seat/pipeline.js";\nexport type P = SeatPipeline;`, /wall 3:/],
  ["3: commands/ imports lifecycle/ beyond registry and kill", "daemon/commands/x.ts", `import "../lifecycle/manager.js";`, /wall 3:/],
  ["4: owner/ imports lifecycle/", "daemon/owner/x.ts", `import "../lifecycle/registry.js";`, /wall 4:/],
  ["4: owner/ imports commands/", "daemon/owner/x.ts", `import "../commands/prompt.js";`, /wall 4:/],
  ["5: lifecycle/ imports seat/", "daemon/lifecycle/x.ts", `import "../seat/egress.js";`, /wall 5:/],
  ["5: lifecycle/ imports server/", "daemon/lifecycle/x.ts", `import "../server/notices.js";`, /wall 5:/],
  ["5: lifecycle/ imports commands/", "daemon/lifecycle/x.ts", `import "../commands/status.js";`, /wall 5:/],
  ["6: seat/ imports lifecycle/", "daemon/seat/pipeline.ts", `import "../lifecycle/manager.js";`, /wall 6:/],
  ["6: seat/ imports owner/ (through a folder that resolves there)", "daemon/seat/pipeline.ts", `import "../host/../owner/acts.js";`, /wall 6:/],
  ["6: a handler imports another handler", "daemon/seat/trunk.ts", `import "./git.js";`, /wall 6 \(handlers\):/],
  [
    "6: a handler imports the shim service",
    "daemon/seat/git.ts",
    `import type { ShimServiceDeps } from "./shim-service.js";\nexport type D = ShimServiceDeps;`,
    /wall 6 \(handlers\):/,
  ],
  [
    "6: server/ beyond the composition root imports a handler",
    "daemon/server/control-service.ts",
    `import "../seat/broker.js";`,
    /wall 6 \(who imports handlers\):/,
  ],
  ["6: src/ imports a handler", "src/effects/x.ts", `import "../../daemon/seat/git.js";`, /wall 6 \(who imports handlers\):/],
  ["7: seat/ imports node:fs", "daemon/seat/files.ts", `import { readFile } from "node:fs/promises";\nexport const r = readFile;`, /wall 7:/],
  ["7: seat/ imports a bare fs", "daemon/seat/pipeline.ts", `import { readFileSync } from "fs";\nexport const r = readFileSync;`, /wall 7:/],
  ["7: seat/ imports child_process", "daemon/seat/git.ts", `import { spawn } from "node:child_process";\nexport const s = spawn;`, /wall 7:/],
  ["7: seat/ requires child_process", "daemon/seat/git.ts", `export const s = () => require("child_process");`, /wall 7:/],
  [
    "7: a handler other than egress imports node:net",
    "daemon/seat/broker.ts",
    `import { connect } from "node:net";\nexport const c = connect;`,
    /wall 7 \(net\):/,
  ],
  ["a computed specifier in a walled file", "daemon/seat/pipeline.ts", `export const m = (p: string) => import(p);`, /computed module specifier/],
];

/** [why it is allowed, the file, its source] */
const kept: Array<[string, string, string]> = [
  ["src/ imports src/", "src/ledger/x.ts", `import { canonicalJson } from "../kernel/index.js";\nexport const c = canonicalJson;`],
  ["host/ imports host/", "daemon/host/x.ts", `import { resolveHome } from "./home.js";\nexport const r = resolveHome;`],
  [
    "commands/ uses owner/, host/ and lifecycle's registry and kill",
    "daemon/commands/x.ts",
    `import "../owner/channel.js";\nimport "../host/home.js";\nimport "../lifecycle/registry.js";\nimport "../lifecycle/kill.js";`,
  ],
  ["owner/ uses host/ and src/", "daemon/owner/x.ts", `import "../host/hub.js";\nimport "../../src/ledger/index.js";`],
  ["lifecycle/ uses host/ and owner/", "daemon/lifecycle/x.ts", `import "../host/seat-layout.js";`],
  ["a handler imports the pipeline and host/", "daemon/seat/git.ts", `import "./pipeline.js";\nimport "../host/seat-layout.js";`],
  ["the pipeline imports the decision lock", "daemon/seat/pipeline.ts", `import "./decision-lock.js";`],
  ["the shim service imports handlers", "daemon/seat/shim-service.ts", `import "./git.js";\nimport "./trunk.js";`],
  ["the composition root imports handlers", "daemon/server/daemon.ts", `import "../seat/git.js";\nimport "../seat/egress.js";`],
  ["the egress handler opens connections", "daemon/seat/egress.ts", `import { connect } from "node:net";\nexport const c = connect;`],
  ["the program's entry imports the rooms", "daemon/cli.ts", `import "./server/serve.js";\nimport "./commands/status.js";`],
  ["a test may import a handler", "test/daemon/x.test.ts", `import "../../daemon/seat/git.js";`],
  ["a file outside daemon/seat/ may use node:fs", "daemon/lifecycle/x.ts", `import { readFile } from "node:fs/promises";\nexport const r = readFile;`],
];

describe("the walls lint", () => {
  it.each(broken)("fires on wall %s", async (_name, file, code, expected) => {
    const found = await walls(code, file);
    expect(found.join("\n")).toMatch(expected);
  });

  it.each(kept)("stays quiet: %s", async (_name, file, code) => {
    expect(await walls(code, file)).toEqual([]);
  });

  it("names the rule, the resolved target and the reason", async () => {
    const [message] = await walls(`import "../seat/./../server/notices.js";`, "daemon/lifecycle/x.ts");
    expect(message).toContain("wall 5: '../seat/./../server/notices.js' (daemon/server/notices.ts)");
    expect(message).toMatch(/never reaches/);
  });
});
