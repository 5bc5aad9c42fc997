import { describe, expect, it } from "vitest";
import { loadTeamFileText } from "../../../src/teamfile/index.js";
import { defaultTeamName, teamFileTemplate } from "../../../daemon/commands/team-file-template.js";

describe("the team file teamd init writes", () => {
  it("loads as it stands, for the named team, with one read-only seat", () => {
    const loaded = loadTeamFileText(teamFileTemplate("web"));
    expect(loaded.ok, JSON.stringify(!loaded.ok && loaded.errors)).toBe(true);
    if (!loaded.ok) return;
    expect(loaded.policy.team).toBe("web");
    expect(Object.keys(loaded.policy.seats)).toEqual(["scout"]);
  });

  it.each([
    ["my-project", "my-project"],
    ["My Project", "my-project"],
    ["2024_repo", "repo"],
    ["teamd.git.mirror", "teamd-git-mirror"],
    ["a".repeat(40), "a".repeat(32)],
    ["---", undefined],
    ["123", undefined],
  ])("derives a team name from the directory %j", (dir, expected) => {
    expect(defaultTeamName(dir)).toBe(expected);
  });
});
