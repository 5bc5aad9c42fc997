import type { SpendCeiling } from "./ceiling.js";
import { visibilityWidens } from "./envelope-visibility.js";
import type { Grant } from "./authority.js";
import { type CanonicalValue, canonicalJson } from "./canonical.js";
import type { ConstraintProgram, Selector } from "./constraint-program.js";
import { type HoldingSeat, violations } from "./constraints.js";
import { readConstraintProgram } from "./constraints-input.js";
import type { CompiledRole, CompiledSeat, CompileResult } from "./compiled-policy.js";
import { type DeclaredSets, isDeclaredName } from "./declared.js";
import { canonicalTaskTrackers, readTaskTrackers } from "./task-trackers.js";
import { canonicalAccountIdentities, readAccountIdentities } from "./account-identities.js";
import { canonicalDeployCommands, deployFiles, readDeploys } from "./deploy-commands.js";
import { readDelegation, showDuration } from "./delegation-input.js";
import { NAME_RULE, isName } from "./names.js";
import { canonicalPath, compareStrings, showPath } from "./paths.js";
import { type InputPath, type PolicyInput, type PolicyProblem, problem } from "./policy-input.js";
import { normalizeBranch } from "./refs.js";
import type { ReservedSet } from "./reserved.js";
import { NO_WRITE_TEMPLATES, ROLE_TEMPLATES, type RoleTemplate, isRoleTemplate, templateGrants } from "./roles.js";
import { type Scope, canonicalDimension, scopeIntersect } from "./scope.js";
import { type ScopeContext, type SeatAdministrative, readCapabilities, readScope } from "./scope-input.js";
import { ownValue } from "./records.js";
import { readStart, type StartContext } from "./start-context.js";
import { canonicalNetwork } from "./egress-context.js";
import { canonicalRestart } from "./start-restart.js";
import { canonicalLimits } from "./start-limits.js";
import { type Dimension, KNOWN_VOCABULARY_VERSIONS, type OperationalCapability, resolveVocabulary } from "./vocabulary.js";

/**
 * Compiling the team file's data into what the kernel decides with (§3, §4, §6): the pinned
 * vocabulary resolved, declared sets canonical, each role resolved to its grants (a template
 * narrowed, plus its own capabilities), each seat's list resolved, the reserved set built, and
 * the canonical texts the loader hashes — the whole file, each role's resolved content, each
 * seat's resolved capability set. Hashing happens outside (the kernel computes no hash);
 * sealPolicy (policy.ts) takes the hashes back in as data.
 */

/** A scope in canonical data form; the root prefix is written `.`, so the form loads again. */
function canonicalScope(scope: Scope): CanonicalValue {
  const out: Record<string, CanonicalValue> = {};
  for (const d of Object.keys(scope) as Dimension[]) {
    const dimension = scope[d];
    if (dimension === undefined) continue;
    const value = canonicalDimension(dimension);
    out[d] = d === "path" && Array.isArray(value) ? value.map(showPath) : value;
  }
  return out;
}

/** A grant's scope in canonical form, with its name where the owner gave one (it loads back as written). */
function grantScope(g: Grant): CanonicalValue {
  const scope = canonicalScope(g.scope) as Record<string, CanonicalValue>;
  return g.name === undefined ? scope : { name: g.name, ...scope };
}

/** Grants as a set: canonical, sorted, without repeats (two equal grants are one alternative). */
function grantSet(grants: readonly Grant[]): CanonicalValue[] {
  const byText = new Map<string, CanonicalValue>();
  for (const g of grants) {
    const value: CanonicalValue = { capability: g.capability, scope: grantScope(g) };
    byText.set(canonicalJson(value), value);
  }
  return [...byText.keys()].sort(compareStrings).map((k) => byText.get(k) as CanonicalValue);
}

/**
 * Grants in canonical order, without repeats. The order decides which of several covering
 * authorities an allow names and how authority ids are numbered, so it must follow from the
 * canonical form alone: a policy restored from its record names the same authorities as the
 * file that was applied, however that file was written.
 */
function canonicalGrants(grants: readonly Grant[]): Grant[] {
  const byText = new Map<string, Grant>();
  for (const g of grants) byText.set(canonicalJson({ capability: g.capability, scope: grantScope(g) }), g);
  return [...byText.keys()].sort(compareStrings).map((k) => byText.get(k) as Grant);
}

/** A capability map in canonical form: capability → sorted list of scopes. */
function capabilityMap(grants: readonly Grant[]): CanonicalValue {
  const out: Record<string, CanonicalValue[]> = {};
  for (const entry of grantSet(grants)) {
    const { capability, scope } = entry as { capability: string; scope: CanonicalValue };
    (out[capability] ??= []).push(scope);
  }
  return out;
}

/** The declared branch set always holds every seat's namespace (DESIGN.md "Repositories"). */
export const SEAT_BRANCHES = "seat/*";

function readDeclared(input: PolicyInput, problems: PolicyProblem[]): DeclaredSets {
  const declare = input.declare ?? {};
  const names = (key: "envs" | "accounts" | "tasks" | "labs"): readonly string[] => {
    const out = new Set<string>();
    (declare[key] ?? []).forEach((value, index) => {
      if (typeof value === "string" && isDeclaredName(value)) out.add(value);
      else
        problems.push(
          problem(
            "teamfile.schema",
            ["declare", key, index],
            `'${String(value)}' is not a valid name`,
            "use letters, digits and . _ : @ / + -, starting with a letter or digit",
          ),
        );
    });
    return Object.freeze([...out].sort(compareStrings));
  };
  // Seat branches (seat/<name>/...) exist in every team: a review or gate scope names them.
  const branches = new Set<string>([SEAT_BRANCHES]);
  (declare.branches ?? []).forEach((value, index) => {
    const branch = typeof value === "string" ? normalizeBranch(value, { pattern: true }) : ({ ok: false, reason: "not text" } as const);
    if (branch.ok) branches.add(branch.name);
    else problems.push(problem("scope.branch", ["declare", "branches", index], branch.reason, "write a branch name (`main`) or a glob (`release/*`)"));
  });
  return Object.freeze({
    branches: Object.freeze([...branches].sort(compareStrings)),
    envs: names("envs"),
    accounts: names("accounts"),
    tasks: names("tasks"),
    labs: names("labs"),
  });
}

function compileRole(
  name: string,
  at: InputPath,
  input: NonNullable<PolicyInput["roles"]>[string],
  ctx: ScopeContext,
): { role: CompiledRole; canonical: CanonicalValue } | undefined {
  const problems = ctx.problems;
  const before = problems.length;
  let template: RoleTemplate | undefined;
  if (input.template !== undefined) {
    if (isRoleTemplate(input.template)) template = input.template;
    else
      problems.push(
        problem(
          "teamfile.schema",
          [...at, "template"],
          `'${String(input.template)}' is not a built-in role template`,
          `use one of: ${Object.keys(ROLE_TEMPLATES).join(", ")}`,
        ),
      );
  }
  const own = readCapabilities(input.capabilities, [...at, "capabilities"], ctx) ?? [];
  let narrowing: Scope | undefined;
  const grants: Grant[] = [];
  if (input.scope !== undefined && input.template === undefined) {
    problems.push(
      problem(
        "teamfile.schema",
        [...at, "scope"],
        "`scope` narrows a template, and this role has none",
        "add `template: <name>`, or put the scope on each capability",
        "key",
      ),
    );
  } else if (template !== undefined) {
    const base = templateGrants(template, ctx.vocabulary);
    const dimensions = [...new Set(base.flatMap((g) => Object.keys(g.scope) as Dimension[]))];
    if (input.scope !== undefined) narrowing = readScope(`template ${template}`, dimensions, input.scope, [...at, "scope"], ctx);
    for (const g of base) {
      const narrowed = narrowing === undefined ? g.scope : scopeIntersect(g.scope, pick(narrowing, Object.keys(g.scope) as Dimension[]));
      if (narrowed === "undecidable")
        problems.push(problem("scope.undecidable", [...at, "scope"], `cannot decide the narrowing of ${g.capability}`, "use simpler globs"));
      else grants.push(Object.freeze({ capability: g.capability, scope: narrowed }));
    }
    if ((NO_WRITE_TEMPLATES as readonly string[]).includes(template) && own.some((g) => g.capability === "write")) {
      problems.push(
        problem(
          "role.no-write",
          [...at, "capabilities", "write"],
          `${template === "observer" ? "an" : "a"} ${template} holds no write: one that can write is an actor (ownership protocol)`,
          "remove write, or base the role on another template (executor)",
          "key",
        ),
      );
    }
  }
  grants.push(...own);
  if (template === undefined && grants.length === 0 && problems.length === before) {
    problems.push(problem("teamfile.schema", at, `role '${name}' grants nothing`, "give it a template or capabilities, or remove it", "key"));
  }
  if (problems.length > before) return undefined;
  const resolved = canonicalGrants(grants);
  const content = canonicalJson({ vocabulary: ctx.vocabulary.version, grants: grantSet(resolved) });
  const canonicalNarrowing =
    narrowing === undefined ? undefined : canonicalScope(Object.fromEntries(Object.entries(narrowing).filter(([, v]) => v.state !== "unconstrained")));
  return {
    role: Object.freeze({ name, builtIn: false, ...(template !== undefined ? { template } : {}), grants: Object.freeze(resolved), content }),
    canonical: { template, scope: canonicalNarrowing, capabilities: capabilityMap(own) },
  };
}

function pick(scope: Scope, dimensions: readonly Dimension[]): Scope {
  const out: Partial<Record<Dimension, NonNullable<Scope[Dimension]>>> = {};
  for (const d of dimensions) {
    const v = scope[d];
    if (v !== undefined) out[d] = v;
  }
  return out;
}

/** Compile validated team-file data; every problem is reported, each at its key path. */
export function compilePolicy(input: PolicyInput): CompileResult {
  const problems: PolicyProblem[] = [];
  const vocabulary = resolveVocabulary(input.version);
  if (vocabulary === undefined) {
    problems.push(
      problem(
        "vocab.version",
        ["version"],
        `capability vocabulary version ${JSON.stringify(input.version) ?? "(none)"} does not resolve in this release`,
        `pin a version this teamd knows: ${KNOWN_VOCABULARY_VERSIONS.join(", ")}`,
      ),
    );
    return { ok: false, problems };
  }
  if (typeof input.team !== "string" || !isName(input.team))
    problems.push(problem("teamfile.schema", ["team"], `'${String(input.team)}' is not a valid team name`, `use ${NAME_RULE}`));
  const declared = readDeclared(input, problems);
  const teamFile = canonicalPath(input.teamFilePath);
  if (!teamFile.ok || teamFile.path === "")
    problems.push(
      problem(
        "teamfile.schema",
        [],
        `the team file's own path '${input.teamFilePath}' is not a repository path`,
        "keep the team file at the repository root as teamd.yaml",
      ),
    );

  const seatsInput = input.seats ?? {};
  const starts = new Map<string, StartContext>();
  for (const [name, seat] of Object.entries(seatsInput)) {
    if (seat.start === undefined) continue;
    const start = readStart(seat.start, ["seats", name, "start"], problems, teamFile.ok ? teamFile.path : "teamd.yaml", seat.lab);
    if (start !== undefined) starts.set(name, start);
  }
  const { commands: deploys, pushes } = readDeploys(input.deploy, declared, problems, teamFile.ok ? teamFile.path : "teamd.yaml");
  // Pinned deploy files are reserved like start files: no seat changes what a deploy runs (§3).
  const startFiles = [...new Set([...[...starts.values()].flatMap((s) => s.files), ...deployFiles(deploys)])].sort(compareStrings);
  const reserved: ReservedSet = Object.freeze({ teamFile: teamFile.ok ? teamFile.path : "teamd.yaml", startFiles: Object.freeze(startFiles) });
  const ctx: ScopeContext = { vocabulary, declared, reserved, problems };
  const trackers = readTaskTrackers(input.trackers, declared, problems);
  const accountIdentities = readAccountIdentities(input.accountIdentities, declared, problems);

  const roles: Record<string, CompiledRole> = {};
  for (const template of Object.keys(ROLE_TEMPLATES) as RoleTemplate[]) {
    const grants = canonicalGrants(templateGrants(template, vocabulary));
    roles[template] = Object.freeze({
      name: template,
      builtIn: true,
      template,
      grants,
      content: canonicalJson({ vocabulary: vocabulary.version, grants: grantSet(grants) }),
    });
  }
  const canonicalRoles: Record<string, CanonicalValue> = {};
  for (const [name, role] of Object.entries(input.roles ?? {})) {
    const at = ["roles", name];
    if (!isName(name)) {
      problems.push(problem("teamfile.schema", at, `'${name}' is not a valid role name`, `use ${NAME_RULE}`, "key"));
      continue;
    }
    if (isRoleTemplate(name)) {
      problems.push(
        problem(
          "teamfile.schema",
          at,
          `'${name}' is a built-in role template and cannot be redefined`,
          `name the role differently and write \`template: ${name}\` in it`,
          "key",
        ),
      );
      continue;
    }
    const compiled = compileRole(name, at, role, ctx);
    if (compiled !== undefined) {
      roles[name] = compiled.role;
      canonicalRoles[name] = compiled.canonical;
    }
  }

  const seats: Record<string, CompiledSeat> = {};
  const canonicalSeats: Record<string, CanonicalValue> = {};
  for (const [name, seat] of Object.entries(seatsInput)) {
    const at = ["seats", name];
    const before = problems.length;
    if (!isName(name)) problems.push(problem("teamfile.schema", at, `'${name}' is not a valid seat name`, `use ${NAME_RULE}`, "key"));
    // "owner" names the owner's principal wherever a signer is a name (a granter, a record's co-authorizer): never a seat.
    else if (name === "owner") problems.push(problem("teamfile.schema", at, "'owner' names the owner, never a seat", "give the seat another name", "key"));
    if (seat.lab !== undefined && !declared.labs.includes(seat.lab)) {
      problems.push(problem("teamfile.schema", [...at, "lab"], `lab '${seat.lab}' is not declared`, `add '${seat.lab}' to declare.labs, or correct the name`));
    }
    const roleNames = [...new Set(seat.roles ?? [])].sort(compareStrings);
    (seat.roles ?? []).forEach((role, index) => {
      if (!Object.prototype.hasOwnProperty.call(roles, role) && !Object.prototype.hasOwnProperty.call(input.roles ?? {}, role)) {
        problems.push(
          problem(
            "teamfile.schema",
            [...at, "roles", index],
            `role '${role}' is not defined`,
            `define it under roles, or use a template: ${Object.keys(ROLE_TEMPLATES).join(", ")}`,
          ),
        );
      }
    });
    const admin: SeatAdministrative[] = [];
    const direct = readCapabilities(seat.capabilities, [...at, "capabilities"], ctx, "grants", admin);
    if (direct === undefined || problems.length > before || roleNames.some((r) => !Object.prototype.hasOwnProperty.call(roles, r))) continue;
    const start = starts.get(name);
    const all = [...roleNames.flatMap((r) => (roles[r] as CompiledRole).grants), ...direct];
    seats[name] = Object.freeze({
      name,
      ...(seat.lab !== undefined ? { lab: seat.lab } : {}),
      roles: Object.freeze(roleNames),
      direct: Object.freeze(canonicalGrants(direct)),
      capabilities: canonicalJson({ vocabulary: vocabulary.version, grants: grantSet(all) }),
      ...(start !== undefined ? { start } : {}),
      ...(admin.length > 0 ? { admin: Object.freeze([...new Set(admin)].sort(compareStrings)) } : {}),
    });
    canonicalSeats[name] = {
      lab: seat.lab,
      roles: roleNames,
      // grant and agree are written `{}`: in the policy hash, outside the operational set a same copy compares (§10).
      capabilities: { ...(capabilityMap(direct) as Record<string, CanonicalValue>), ...Object.fromEntries(admin.map((a) => [a, {}])) },
      start:
        start === undefined
          ? undefined
          : {
              command: start.command,
              workdir: showPath(start.workdir),
              env: start.env,
              files: start.files,
              ...(start.network !== undefined ? { network: canonicalNetwork(start.network) } : {}),
              ...(start.limits !== undefined ? { limits: canonicalLimits(start.limits) } : {}),
              ...(start.containment !== undefined ? { containment: start.containment } : {}),
              ...(start.restart !== undefined ? { restart: canonicalRestart(start.restart) } : {}),
            },
    };
  }
  const program = readConstraintProgram(input.constraints, input.review, problems, (r) => Object.prototype.hasOwnProperty.call(roles, r));
  const delegation = readDelegation(input, Object.keys(seatsInput), ctx);
  // §9: "leads has no grant power" — the leads seat holds no grant (it would grant alone as a seat what it may not as leads).
  const leadsSeat = delegation.leads?.seat;
  if (leadsSeat !== undefined && (ownValue(seats, leadsSeat)?.admin ?? []).includes("grant"))
    problems.push(
      problem(
        "teamfile.schema",
        ["seats", leadsSeat, "capabilities", "grant"],
        `${leadsSeat} is leads, and leads has no grant power (§9)`,
        "give grant to another seat (a deputy), or name another seat as leads",
        "key",
      ),
    );
  if (input.review === undefined) {
    const problemText = reviewModeMissing(holdingSeats(seats, roles), delegation.leads?.envelope ?? []);
    if (problemText !== undefined)
      problems.push(
        problem(
          "teamfile.review-mode",
          ["review"],
          `${problemText}, and the team file names no review mode (§5: an explicit, owner-chosen policy). distinct-seat: the author of a change may not review, gate or merge it, any other seat may; cross-lab: nor may a seat of the author's lab`,
          "write `review: { mode: distinct-seat }` or `review: { mode: cross-lab, floor: 1 }` at the top of the file",
        ),
      );
  }
  // §8: a team file may not declare more seats of a lab than the ceiling's seats allow.
  const capped = delegation.ceiling?.seats ?? {};
  for (const [lab, cap] of Object.entries(capped)) {
    const declaredSeats = Object.entries(seats)
      .filter(([, s]) => s.lab === lab)
      .map(([name]) => name);
    if (declaredSeats.length > cap)
      problems.push(
        problem(
          "envelope.seats",
          ["ceiling", "seats", lab],
          `the file declares ${declaredSeats.length} seat(s) of lab ${lab} (${declaredSeats.sort(compareStrings).join(", ")}) and the ceiling caps it at ${cap}`,
          `remove seats of ${lab}, or raise its cap`,
        ),
      );
  }
  // §8: no seat of a lab may be granted a read past the lab's visibility cap.
  const caps = { seats, ...(delegation.ceiling !== undefined ? { ceiling: delegation.ceiling } : {}) };
  for (const [name, s] of Object.entries(seats)) {
    const reads = [...s.roles.flatMap((r) => (Object.prototype.hasOwnProperty.call(roles, r) ? (roles[r]?.grants ?? []) : [])), ...s.direct].filter(
      (g) => g.capability === "read",
    );
    for (const g of reads) {
      const widens = visibilityWidens(caps, name, g.scope, { declared });
      if (widens !== undefined)
        problems.push(
          problem("envelope.visibility", ["seats", name], widens.reason, `narrow the seat's read, or widen lab ${s.lab ?? ""}'s visibility (an owner act)`),
        );
    }
  }
  if (problems.length === 0 && input.proposal !== true) {
    // At launch (static, §5): a file whose own seats break a constraint cannot be in force.
    for (const v of violations(program, holdingSeats(seats, roles))) {
      problems.push(
        problem(
          v.rule,
          ["constraints", v.index],
          v.message,
          v.rule === "constraint.exclusion"
            ? "take one of them from the seat, or remove the exclusion"
            : "change the seats so the count fits, or change the constraint (an owner act)",
        ),
      );
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  const canonical = canonicalJson({
    version: vocabulary.version,
    team: input.team,
    declare: { branches: declared.branches, envs: declared.envs, accounts: declared.accounts, tasks: declared.tasks, labs: declared.labs },
    roles: canonicalRoles,
    seats: canonicalSeats,
    review: { mode: program.review.mode, floor: program.review.floor },
    constraints: canonicalConstraints(program),
    ...canonicalDelegation(delegation),
    // Left out when absent, so a policy without deploy commands keeps the hash it had before them.
    ...(deploys !== undefined ? { deploy: canonicalDeployCommands(deploys, pushes) } : {}),
    ...(trackers !== undefined ? { trackers: canonicalTaskTrackers(trackers) } : {}),
    // Left out when absent, so a policy without identities keeps the hash it had before them.
    ...(accountIdentities !== undefined ? { accounts: canonicalAccountIdentities(accountIdentities) } : {}),
  });
  return {
    ok: true,
    policy: Object.freeze({
      vocabulary,
      team: input.team,
      declared,
      reserved,
      roles: Object.freeze(roles),
      seats: Object.freeze(seats),
      constraints: program,
      ...delegation,
      ...(deploys !== undefined ? { deploys } : {}),
      ...(pushes !== undefined ? { pushes } : {}),
      ...(trackers !== undefined ? { trackers } : {}),
      ...(accountIdentities !== undefined ? { accountIdentities } : {}),
      canonical,
    }),
  };
}

/**
 * The delegation settings in canonical form, under the team file's own keys so the form loads
 * again; a setting the file does not write is left out, so a policy without them keeps the
 * hash it had before leases existed.
 */
/** `ceiling.spend` as the team file writes it (amounts in major units, two decimals), so the canonical form loads back the same. */
function canonicalSpend(spend: SpendCeiling): Record<string, CanonicalValue> {
  const major = (minor: number) => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, "0")}`;
  return {
    currency: spend.currency,
    period: spend.period.kind === "month" ? "month" : showDuration(spend.period.ms),
    total: major(spend.total),
    labs: Object.fromEntries(Object.entries(spend.labs).map(([lab, minor]) => [lab, major(minor)])),
    "per-dispatch": major(spend.perDispatch),
    "stale-after": showDuration(spend.staleAfterMs),
  };
}

function canonicalDelegation(d: ReturnType<typeof readDelegation>): Record<string, CanonicalValue> {
  const out: Record<string, CanonicalValue> = {};
  if (d.leads !== undefined) out.leads = { seat: d.leads.seat, envelope: capabilityMap(d.leads.envelope) };
  if (d.ceiling !== undefined) {
    const bounds = d.ceiling.capabilities;
    const grants: Grant[] = [];
    for (const [capability, scopes] of Object.entries(bounds ?? {}))
      for (const scope of scopes ?? []) grants.push({ capability: capability as OperationalCapability, scope });
    out.ceiling = {
      ...(bounds !== undefined ? { capabilities: capabilityMap(grants) } : {}),
      "lease-ttl": showDuration(d.ceiling.leaseTtlMs),
      ...(d.ceiling.seats !== undefined ? { seats: { ...d.ceiling.seats } } : {}),
      ...(d.ceiling.runtimeMs !== undefined ? { runtime: showDuration(d.ceiling.runtimeMs) } : {}),
      ...(d.ceiling.spend !== undefined ? { spend: canonicalSpend(d.ceiling.spend) } : {}),
      ...(d.ceiling.visibility !== undefined
        ? {
            visibility: Object.fromEntries(
              Object.entries(d.ceiling.visibility).map(([lab, s]) => [lab, s.state === "bounded" ? [...s.values] : s.state === "empty" ? [] : ["."]]),
            ),
          }
        : {}),
    };
  }
  if (d.deny !== undefined) out.deny = capabilityMap(d.deny);
  if (d.twoGranter !== undefined)
    out["two-granter"] = d.twoGranterLabs === "distinct" ? { capabilities: [...d.twoGranter], labs: "distinct" } : [...d.twoGranter];
  return out;
}

function showSelectorValue(s: Selector): string {
  return s.kind === "capability" ? s.capability : `role:${s.role}`;
}

/** The constraint program in canonical form: part of the policy hash, so any change to it is visible. */
function canonicalConstraints(program: ConstraintProgram): CanonicalValue {
  const list: CanonicalValue[] = program.constraints.map((c) =>
    c.kind === "exclusion"
      ? { exclusive: c.of.map(showSelectorValue).sort(compareStrings) }
      : c.kind === "minimum"
        ? { minimum: c.count, of: showSelectorValue(c.of), pauses: [...c.pauses] }
        : { maximum: c.count, of: showSelectorValue(c.of) },
  );
  if (program.deployAuthorInequality) list.push({ "author-inequality": "deploy" });
  return list;
}

/** Who could review, gate or merge (a seat's grant, or the leads envelope that leases them), in words; undefined when none could. */
function reviewModeMissing(seats: Readonly<Record<string, HoldingSeat>>, envelope: readonly Grant[]): string | undefined {
  const trunkActs = ["review", "gate", "merge"];
  for (const seat of Object.values(seats)) {
    const held = trunkActs.filter((c) => (seat.byCapability[c as OperationalCapability] ?? []).length > 0);
    if (held.length > 0) return `seat ${seat.name} holds ${held.join(", ")}`;
  }
  const leased = trunkActs.filter((c) => envelope.some((g) => g.capability === c));
  return leased.length > 0 ? `the leads envelope leases ${leased.join(", ")}` : undefined;
}

/** The compiled seats as counting sees them: each grant an authority, by capability. */
function holdingSeats(seats: Readonly<Record<string, CompiledSeat>>, roles: Readonly<Record<string, CompiledRole>>): Record<string, HoldingSeat> {
  const out: Record<string, HoldingSeat> = {};
  for (const seat of Object.values(seats)) {
    const authorities: HoldingSeat["authorities"][number][] = [];
    const add = (source: { kind: "role"; role: string; roleHash: string } | { kind: "direct" }, grants: readonly Grant[]): void => {
      grants.forEach((g, i) => authorities.push({ ...g, id: `${seat.name}/${i}`, seat: seat.name, source }));
    };
    for (const r of seat.roles) add({ kind: "role", role: r, roleHash: "" }, roles[r]?.grants ?? []);
    add({ kind: "direct" }, seat.direct);
    const byCapability: Record<string, typeof authorities> = {};
    for (const a of authorities) (byCapability[a.capability] ??= []).push(a);
    out[seat.name] = { name: seat.name, roles: seat.roles, authorities, byCapability };
  }
  return out;
}
