import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { authorize } from "../../src/kernel/authorize.js";
import type { KernelRequest } from "../../src/kernel/request.js";
import { createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileText } from "../../src/teamfile/load.js";
import { runCaseText } from "../../src/teamfile/case-runner.js";

/** The published examples are real: the schema's example loads, the case format's example runs. */
function fenced(file: string, language: string): string[] {
  const text = readFileSync(new URL(`../../docs/${file}`, import.meta.url), "utf8");
  return [...text.matchAll(new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1] as string);
}

describe("docs/team-file.md", () => {
  const [example] = fenced("team-file.md", "yaml");
  const files: Record<string, string> = { "CLAUDE.md": "You are alice.\n", "AGENTS.md": "You are bob.\n", "deploy/ship.sh": "#!/bin/sh\nexit 0\n" };
  const loaded = loadTeamFileText(example ?? "", { readStartFile: (p) => (p in files ? new TextEncoder().encode(files[p]) : undefined) });

  it("has a complete example that loads", () => {
    expect(example).toBeDefined();
    expect(loaded.ok ? [] : loaded.errors).toEqual([]);
  });

  it("states the resource envelope it documents: seats per lab, the unattended runtime and spend", () => {
    if (!loaded.ok) throw new Error("example does not load");
    expect(loaded.policy.ceiling?.runtimeMs).toBe(8 * 3600 * 1000);
    expect(loaded.policy.ceiling?.seats).toEqual({ anthropic: 2, openai: 1, google: 1 });
    expect(loaded.policy.ceiling?.spend).toEqual({
      currency: "USD",
      period: { kind: "month" },
      total: 20_000,
      labs: { anthropic: 12_000 },
      perDispatch: 1000,
      staleAfterMs: 2 * 3600 * 1000,
    });
  });

  it("decides as its comments say", () => {
    if (!loaded.ok) throw new Error("example does not load");
    const view = createKernelView(loaded.policy);
    const decide = (seat: string, capability: string, effect: Record<string, unknown>, extra: Record<string, unknown> = {}): string => {
      const d = authorize(view, { seat, capability, effect, ...extra } as KernelRequest, 0);
      return d.decision === "allow" ? `allow ${d.authority.id}` : d.rule;
    };
    expect(decide("alice", "write", { paths: ["docs/guide.md"] })).toBe("allow alice/role:docs-writer/write/0");
    expect(decide("alice", "write", { paths: ["src/a.ts"] })).toBe("scope.path");
    expect(decide("alice", "read", { paths: ["src/a.ts"] })).toBe("allow alice/role:observer/read/0");
    expect(decide("alice", "write", { paths: ["CLAUDE.md"] })).toBe("reserved.object");
    expect(decide("bob", "write", { paths: ["AGENTS.md"] })).toBe("reserved.object");
    expect(decide("carol", "write", { paths: ["src/api/x.ts"] })).toBe("authority.none");
    expect(decide("carol", "merge", { paths: ["docs/a.md", "src/b.ts"], branch: "main" })).toBe("scope.mixed");
    expect(decide("carol", "act-as", { account: "github:acme-bot" })).toBe("allow carol/direct/act-as/0");
    // The deny wins over bob's executor write; leads (carol) holds her envelope, never acts under it.
    expect(decide("bob", "write", { paths: ["secrets/key.txt"] })).toBe("deny.match");
    expect(decide("bob", "write", { paths: ["src/a.ts"] })).toBe("allow bob/role:executor/write/0");
    expect(loaded.policy.leads?.seat).toBe("carol");
    expect(loaded.policy.ceiling?.leaseTtlMs).toBe(8 * 3_600_000);
    expect(decide("bob", "use-broker", { task: "gh:web" }, { brokerOperation: "claim" })).toBe("allow bob/direct/use-broker/0");
    expect(decide("bob", "use-broker", { task: "notes" }, { brokerOperation: "pull" })).toBe("scope.task");
    expect(loaded.policy.trackers).toEqual({ "gh:web": "web" });
    expect(loaded.policy.pushes?.prod).toEqual({ env: "prod", url: "https://github.com/acme/web.git", branch: "main", account: "github:acme-bot" });
    // review + constraints: carol gates in cross-lab mode; the example's constraints hold at launch.
    expect(decide("carol", "gate", { paths: ["src/api/x.ts"], branch: "main" })).toBe("act.effect-id");
    expect(decide("carol", "gate", { paths: ["src/api/x.ts"], branch: "main", effectId: "sha256:e" })).toBe("sod.authorship-unknown");
    expect(loaded.ok && loaded.policy.constraints.review).toEqual({ mode: "cross-lab", floor: 1 });
    expect(loaded.ok && loaded.policy.constraints.constraints.length).toBe(3);
    expect(loaded.ok && loaded.policy.constraints.deployAuthorInequality).toBe(true);
  });

  it("lists every credential shape the loader knows and every not-supported key it refuses", async () => {
    const text = readFileSync(new URL("../../docs/team-file.md", import.meta.url), "utf8");
    const { NOT_SUPPORTED } = await import("../../src/teamfile/not-supported.js");
    for (const level of Object.values(NOT_SUPPORTED)) for (const key of Object.keys(level)) expect(text, key).toContain(`${key}\``);
    for (const prefix of ["sk-ant-", "sk-", "ghp_", "github_pat_", "AKIA", "xoxb-", "AIza", "PRIVATE KEY"]) expect(text).toContain(prefix);
  });
});

describe("docs/kernel-cases.md", () => {
  it("has an example case file that runs and passes", () => {
    const [example] = fenced("kernel-cases.md", "json");
    const report = runCaseText("example", example ?? "");
    expect(report.errors).toEqual([]);
    expect(report.results.length).toBeGreaterThan(2);
    expect(report.results.filter((r) => !r.ok)).toEqual([]);
  });
});
