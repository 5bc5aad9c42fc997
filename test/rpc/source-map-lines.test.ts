import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lineSourceMap, type SourceMapPayload } from "../../src/rpc/source-map-lines.js";
import { ROOT } from "../support/programs.js";

/** What a lookup names, in one comparable shape. */
const named = (entry: { originalSource?: string; originalLine?: number; originalColumn?: number; name?: string }) => [
  entry.originalSource,
  entry.originalLine,
  entry.originalColumn,
  entry.name,
];

describe("lineSourceMap: Node's SourceMap#findEntry without the decoded map", () => {
  // The bundles the build wrote (global setup builds them): the daemon's, the owner's, the client's, the CLI's front.
  it.each(["teamd-daemon", "teamd-owner", "teamd-client", "teamd"])("answers every lookup of dist/bin/%s.cjs.map as Node's SourceMap does", (name) => {
    const payload = JSON.parse(readFileSync(join(ROOT, "dist/bin", `${name}.cjs.map`), "utf8")) as SourceMapPayload;
    const lines = readFileSync(join(ROOT, "dist/bin", `${name}.cjs`), "utf8").split("\n");
    const node = new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]);
    const lean = lineSourceMap(payload);
    let compared = 0;
    let mapped = 0;
    // Every 5th line (and past the end), at columns from the line's start to far past its end.
    for (let line = 0; line < lines.length + 3; line += 5) {
      for (const column of [0, 1, 4, 9, 23, 60, 150, 400, 4000]) {
        const expected = named(node.findEntry(line, column));
        expect(named(lean.findEntry(line, column)), `line ${line}, column ${column}`).toEqual(expected);
        compared += 1;
        if (expected[0] !== undefined) mapped += 1;
      }
    }
    // Not vacuous: most lookups land on a source.
    expect(compared).toBeGreaterThan(1000);
    expect(mapped / compared).toBeGreaterThan(0.5);
  });

  // A hand-made map: "AAAA" maps (0,0) to a.ts (0,0); "IAAIA" adds 4 to the columns and names
  // "first"; "C" is a column alone (no source); ";;" an empty line; "ICAG" moves to b.ts;
  // "GADD" steps back (negative deltas); an empty last line keeps the map from ending on a
  // segment (Node's own parser reads past the end there, and names such a segment "first").
  const payload: SourceMapPayload = { sources: ["a.ts", "b.ts"], names: ["first"], mappings: "AAAA,IAAIA,C;;AACA,EAAE;ICAG,GADD;" };
  it.each([
    [0, 0],
    [0, 3],
    [0, 4],
    [0, 5],
    [0, 99],
    [1, 0],
    [2, 0],
    [2, 1],
    [2, 2],
    [3, 3],
    [3, 4],
    [3, 7],
    [3, 9],
    [4, 0],
    [7, 2],
    [-1, 0],
  ])("a hand-made map at line %i, column %i: as Node's", (line, column) => {
    const node = new SourceMap({
      version: 3,
      file: "x.js",
      ...payload,
      names: [...(payload.names ?? [])],
      sources: [...payload.sources],
    } as ConstructorParameters<typeof SourceMap>[0]);
    expect(named(lineSourceMap(payload).findEntry(line, column))).toEqual(named(node.findEntry(line, column)));
  });

  it("refuses mappings that are not base64 VLQ, naming the character", () => {
    expect(() => lineSourceMap({ sources: ["a.ts"], mappings: "AAAA;A!AA" })).toThrow(/"!"/);
    expect(() => lineSourceMap({ sources: ["a.ts"], mappings: "AAAA;g" })).toThrow(/inside a number/);
  });
});
