import { describe, expect, it } from "vitest";
import { actAsAccount, type UnderAccount } from "../../src/kernel/act-as.js";
import type { Policy } from "../../src/kernel/policy.js";

/**
 * Under which of the owner's accounts an act runs (src/kernel/act-as.ts), for the broker and
 * deploy alike, as one table. The broker's rows also run through `authorize`
 * (test/kernel/cases/scope-named.json); deploy's are asked by the deploy handler before
 * anything is recorded as an intent (test/integration/deploy.test.ts drives them end to end).
 */
const policy: Pick<Policy, "pushes"> = {
  pushes: { release: { env: "release", url: "https://git.example/acme/app.git", branch: "main", account: "github:acme-bot" } },
};

const cases: {
  description: string;
  act: UnderAccount;
  named: string | undefined;
  expected: { account: string | undefined } | { rule: string; reason: RegExp };
}[] = [
  {
    description: "a broker comment runs under the account the seat names",
    act: { act: "broker", operation: "comment" },
    named: "github:acme-bot",
    expected: { account: "github:acme-bot" },
  },
  {
    description: "a broker comment that names no account is refused",
    act: { act: "broker", operation: "comment" },
    named: undefined,
    expected: { rule: "act-as.required", reason: /a broker comment is made under the owner's account; name it/ },
  },
  { description: "a broker pull runs under no account", act: { act: "broker", operation: "pull" }, named: undefined, expected: { account: undefined } },
  {
    description: "a broker pull that names an account is refused, not ignored",
    act: { act: "broker", operation: "pull" },
    named: "github:acme-bot",
    expected: { rule: "act-as.unmediated", reason: /a broker pull runs under the tracker's credential.*drop --as 'github:acme-bot'/ },
  },
  {
    description: "a broker claim that names an account is refused",
    act: { act: "broker", operation: "claim" },
    named: "x",
    expected: { rule: "act-as.unmediated", reason: /a broker claim runs under the tracker's credential/ },
  },
  { description: "a broker read runs under no account", act: { act: "broker", operation: "read" }, named: undefined, expected: { account: undefined } },
  {
    description: "a deploy that runs the owner's command runs under no account",
    act: { act: "deploy", env: "staging" },
    named: undefined,
    expected: { account: undefined },
  },
  {
    description: "a deploy that runs a command and names an account is refused",
    act: { act: "deploy", env: "staging" },
    named: "github:acme-bot",
    expected: { rule: "act-as.unmediated", reason: /a deploy to staging runs the owner's command, under no owner's account; drop --as 'github:acme-bot'/ },
  },
  {
    description: "a publish runs under the declared account when the seat names none",
    act: { act: "deploy", env: "release" },
    named: undefined,
    expected: { account: "github:acme-bot" },
  },
  {
    description: "a publish runs under the declared account when the seat names that one",
    act: { act: "deploy", env: "release" },
    named: "github:acme-bot",
    expected: { account: "github:acme-bot" },
  },
  {
    description: "a publish that names another account is refused",
    act: { act: "deploy", env: "release" },
    named: "npm:acme",
    expected: {
      rule: "act-as.required",
      reason: /a deploy to release pushes under the account the owner declared for it, 'github:acme-bot'; --as 'npm:acme' names another/,
    },
  },
  {
    description: "an env named like an object's own property is no publish",
    act: { act: "deploy", env: "constructor" },
    named: undefined,
    expected: { account: undefined },
  },
];

describe("actAsAccount", () => {
  it.each(cases)("$description", ({ act, named, expected }) => {
    const got = actAsAccount(policy, act, named);
    if ("account" in expected) {
      expect(got).toEqual({ account: expected.account });
      return;
    }
    expect(got).toMatchObject({ decision: "refuse", rule: expected.rule });
    expect("reason" in got ? got.reason : "").toMatch(expected.reason);
  });

  it("a policy with no publishing environment runs every deploy under no account", () => {
    expect(actAsAccount({}, { act: "deploy", env: "release" }, undefined)).toEqual({ account: undefined });
    expect(actAsAccount({}, { act: "deploy", env: "release" }, "github:acme-bot")).toMatchObject({ rule: "act-as.unmediated" });
  });
});
