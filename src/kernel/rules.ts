/**
 * The closed set of rule ids a refusal can name. Every refusal teamd makes names one of
 * these, and each points at the section of the Kernel RFC (spec/002) that it enforces.
 * Adding a rule means adding it here, which breaks every non-exhaustive switch over
 * RuleId: a new rule can not slip through a handler that does not know it.
 */
export const RULES = {
  "channel.control-on-seat": {
    section: "§11",
    summary: "an owner (control) call arrived on a seat socket; the owner speaks only on the control socket",
  },
  "channel.seat-on-control": {
    section: "§11",
    summary: "a seat (shim) call arrived on the control socket; a seat speaks only on its own socket",
  },
  "rpc.version": {
    section: "§11",
    summary: "the caller speaks another wire protocol version; a caller the daemon cannot place is refused",
  },
  "rpc.malformed": {
    section: "§11",
    summary: "the request could not be decoded; what cannot be read is refused, never guessed",
  },
  "rpc.frames": {
    section: "§11",
    summary: "a seat's stream came in DATA frames too small for what they carry (each costs the daemon an object); the stream is reset",
  },
  "rpc.messages": {
    section: "§11",
    summary:
      "a seat's stream came in gRPC messages too small for what they carry (each costs the daemon an object and a turn of its handler); the stream is reset",
  },
  "rpc.overhead": {
    section: "§11",
    summary:
      "a seat's connection sent more than its calls carry (frames on closed or answered streams, frames HTTP/2 ignores, control frames past need); the connection is closed",
  },
  "ledger.unavailable": {
    section: "§15",
    summary: "the ledger store cannot be opened or written; an act that cannot be recorded is refused",
  },
  "ledger.head-mismatch": {
    section: "§15",
    summary: "the signed head is missing, unverifiable, or does not match the store's tip; the gate fails closed until the owner reconciles",
  },
  "ledger.rollback": {
    section: "§15",
    summary: "the store is behind the signed head (an older copy); refused until the owner reconciles",
  },
  "ledger.fork": {
    section: "§15",
    summary: "the store diverges from the signed head (copies grown apart); refused until the owner reconciles",
  },
  "ledger.missing-record": {
    section: "§15",
    summary: "a record the chain or the head names is absent from the store; refused until the owner reconciles",
  },
  "ledger.chain-broken": {
    section: "§15",
    summary: "a stored record, link or seal does not verify; refused until the owner reconciles",
  },
  "ledger.key-mismatch": {
    section: "§11",
    summary: "the ledger's genesis pins other owner or daemon keys than this daemon holds; nothing is appended",
  },
  "ledger.unknown-outcome": {
    section: "§15",
    summary: "an earlier effect on this target has an unknown outcome; acts on it wait for a recorded reconciliation",
  },
  "ledger.reconcile-stale": {
    section: "§15",
    summary: "a reconciliation names another state than the one observed now; re-read the state and sign again",
  },
  "owner.signature": {
    section: "§11",
    summary: "an owner act whose signature does not verify against the owner key pinned at genesis",
  },
  "owner.act-invalid": {
    section: "§15",
    summary: "an owner act that is malformed, non-canonical, or names state that does not exist",
  },
  "request.replay-mismatch": {
    section: "§15",
    summary: "a request id already used with another payload; a retry must be byte-identical",
  },
  "stop.team": {
    section: "§9, §15",
    summary:
      "the team is stopped (teamd stop --team): every start and gated act of it is refused, with the store down and across restarts, until an owner's teamd resume --team",
  },
  "stop.active": {
    section: "§11",
    summary: "an owner's stop is in force (a local flag or a recorded stop); only an owner resume clears it",
  },
  "flag.unverifiable": {
    section: "§11",
    summary: "a stop or revocation flag could not be read or its owner signature verified; fail closed",
  },
  // The kernel's decision and the team file (issue 4). Each refusal of `authorize` and each
  // problem the team-file loader reports names one of these.
  "kernel.fault": {
    section: "§11",
    summary: "the decision function met a state it could not evaluate; it refuses rather than throws (fail closed)",
  },
  "request.malformed": {
    section: "§11",
    summary: "the request handed to the kernel is not one it can read (a missing, extra or ill-typed field); refused, never guessed",
  },
  "seat.unknown": {
    section: "§10",
    summary: "the seat is not in the policy in force; a seat holds its list and nothing else",
  },
  "vocab.version": {
    section: "§3",
    summary: "the capability vocabulary version the team file pins does not resolve in this release; fail closed",
  },
  "vocab.unknown": {
    section: "§3",
    summary: "a capability the vocabulary does not know is refused, not honoured",
  },
  "vocab.dimension": {
    section: "§3",
    summary: "a dimension the capability does not take is rejected, not ignored",
  },
  "vocab.unsupported": {
    section: "§3",
    summary: "a capability this release knows but does not yet decide (the administrative ones, §9–§10) is refused",
  },
  "authority.none": {
    section: "§10",
    summary: "the seat holds no authority for this capability (a seat holds its list and its live leases, nothing else)",
  },
  "reserved.object": {
    section: "§3",
    summary: "the effect touches a tool-reserved object (the team file, .git, a pinned start file); no scope opens one",
  },
  "scope.path": {
    section: "§6",
    summary: "a path the effect touches is outside every path scope the seat holds for this capability",
  },
  "scope.branch": {
    section: "§6",
    summary: "the branch is outside the declared branch set or outside every branch scope the seat holds",
  },
  "scope.env": {
    section: "§6",
    summary: "the environment is outside the declared set or outside every env scope the seat holds",
  },
  "scope.account": {
    section: "§6",
    summary: "the account is outside the declared set or outside every account scope the seat holds",
  },
  "scope.task": {
    section: "§6",
    summary: "the task resource is outside the declared set or outside every task scope the seat holds",
  },
  "scope.mixed": {
    section: "§6",
    summary: "the effect is covered only by several authorities together; authorities are never merged, one must cover it whole",
  },
  "scope.undecidable": {
    section: "§6",
    summary: "a scope question the kernel cannot decide is refused, not treated as universal",
  },
  "broker.operation": {
    section: "§11",
    summary:
      "use-broker allows pull, claim and read of a task's non-secret fields, and a comment on a task under the owner's account (with act-as), and nothing else",
  },
  "broker.tracker": {
    section: "§11",
    summary:
      "the task resource's tracker is not configured, or its configuration is unsafe (readable by group or other, another user's) or invalid; nothing was asked of the tracker until the owner fixes it",
  },
  "broker.task": {
    section: "§11",
    summary: "there is no such task in the resource (or the id is malformed); nothing happened",
  },
  "broker.claimed": {
    section: "§11",
    summary: "the task is already claimed by another seat; nothing happened",
  },
  "broker.upstream": {
    section: "§11",
    summary: "the tracker answered with an error or did not answer; the outcome record says whether a claim may have happened",
  },
  "broker.replay": {
    section: "§11",
    summary: "what the broker serves is never recorded, so a retried pull or read is answered with nothing; ask again with a new request id",
  },
  // The act-time stage (issue 5): constraints, separation of duties, the review mode,
  // independent verification, gate passes, the §9 table and §10 agreement.
  "act.effect-id": {
    section: "§15",
    summary: "a review, gate, merge or deploy names the effect id of the change it acts on; without it nothing binds the act to an artifact",
  },
  "constraint.minimum": {
    section: "§5",
    summary: "fewer seats would hold a capability or role than the owner's minimum; a request that would break it is refused",
  },
  "constraint.maximum": {
    section: "§5",
    summary: "more seats would hold a capability or role than the owner's maximum",
  },
  "constraint.exclusion": {
    section: "§5",
    summary: "one seat would hold capabilities or roles the owner made mutually exclusive",
  },
  "constraint.paused": {
    section: "§5",
    summary: "a minimum is unmet (a revocation, expiry or stop applied) and this act is one it gates; it pauses until the minimum is restored",
  },
  "sod.author": {
    section: "§5",
    summary: "a seat that wrote the change may not gate or merge it, nor deploy it where the owner bound deploy to the author-inequality",
  },
  "sod.authorship-unknown": {
    section: "§5, §15",
    summary: "the change's full author set cannot be established from the ledger; the act is refused (fail closed)",
  },
  "lab.same": {
    section: "§5",
    summary: "cross-lab review mode: an author's lab is the gater's or the merger's lab",
  },
  "lab.binding-missing": {
    section: "§5",
    summary: "cross-lab review mode: an author's, the gater's or the merger's owner-signed lab binding is missing; refused, never downgraded",
  },
  "review.floor": {
    section: "§5",
    summary: "the review floor is not met: too few approving, independent reviewer seats (from distinct labs in cross-lab mode)",
  },
  "verify.independence": {
    section: "O, §5",
    summary: "a verdict by the executing seat, or by a seat sharing its run or its home, is not independent verification",
  },
  "verify.unknown": {
    section: "O, §15",
    summary: "the verifying seat's run or home is not known, so independence cannot be established; refused",
  },
  "pass.missing": {
    section: "§15",
    summary: "no gate record of result pass bound to this effect id; an obsolete pass, a refusal record or an intent never qualifies",
  },
  "pass.voided": {
    section: "§15",
    summary: "a refused or unknown outcome for this effect id voids every pass for it recorded before it (in every environment); re-gate",
  },
  "pass.gater-invalid": {
    section: "§15",
    summary: "the pass's gater no longer holds the gate authority it used (revoked, or it no longer covers the effect), or no longer satisfies §5",
  },
  "pass.consumed": {
    section: "§15",
    summary: "every valid pass for this effect id has already been consumed by a merge; a pass is consumed once",
  },
  "table.owner-only": {
    section: "§9, §8",
    summary: "the change touches an owner-sovereign setting (constraints, review mode, lab bindings, declared sets, …); only the owner may make it",
  },
  "table.principal": {
    section: "§9",
    summary: "the principal is not the one the authorization table names for this operation",
  },
  "agree.not-same-copy": {
    section: "§10",
    summary: "agree permits only a same-copy seat (identical start files, role content, capability set and execution context); anything else is a grant",
  },
  "agree.copy-holds-admin": {
    section: "§10",
    summary: "a same-copy seat holds no agree, grant, create or leads and no live lease",
  },
  "twogranter.labs": {
    section: "§10",
    summary: "the owner requires the two granters of a two-granter change from different labs, and these two share one",
  },
  "twogranter.standing": {
    section: "§9, §10",
    summary: "a granter is the owner or a seat holding grant; leads has no grant power and is never a granter",
  },
  "twogranter.pending": {
    section: "§10",
    summary: "the change is behind two-granter agreement: it waits, as a proposal, for a second granter's confirmation over the same input state",
  },
  "create.not-held": {
    section: "§10",
    summary: "the seat does not hold create: the owner writes it in a seat's own capabilities; it is never leased, copied or issued onward",
  },
  "create.bound": {
    section: "§10",
    summary: "no create-bound is written on the machine for this seat: create is bounded by what the owner wrote",
  },
  "create.count": {
    section: "§10",
    summary: "the seat has created as many teams as its create-bound allows",
  },
  "create.name": {
    section: "§10",
    summary: "the child team's name is already a registered team",
  },
  "create.root": {
    section: "§10",
    summary: "the child's repository root is not one the create-bound names, or already a team's",
  },
  "create.start": {
    section: "§10",
    summary: "a child seat's start command is not one the create-bound lets it pin, or would run uncontained",
  },
  "create.grant": {
    section: "§10",
    summary: "a child seat holds grant or agree, and the create-bound does not let the new team's seats be given it",
  },
  "create.owner-only": {
    section: "§3",
    summary: "a created team may not carry deploy commands, accounts or trackers: they act under the owner's identity",
  },
  "create.seats": {
    section: "§8",
    summary: "the child's seats do not fit its slice: a lab the bound does not name, or more seats than the lab's allowance",
  },
  "create.slice": {
    section: "§8",
    summary: "the child's slice does not fit the creator's remainder (aggregate or per lab, spend or seats), or cannot be debited",
  },
  "create.invalid": {
    section: "§10",
    summary: "the child's team file does not load, or the create request is malformed",
  },
  "grant.administrative": {
    section: "§10",
    summary: "no agent holds grant, agree, create or leads unless the owner writes it: a delegate never gives one",
  },
  "grant.absent": {
    section: "§10",
    summary: "the grant to take back is not a direct grant of that seat in the policy in force (or several are: name one)",
  },
  "grant.rekeys": {
    section: "§7, §10",
    summary: "the delegated grant would re-key an existing unnamed grant and so revoke its leases; name the new grant",
  },
  "policy.delegated": {
    section: "§10",
    summary:
      "the policy in force holds delegated grants the owner's file does not say: keep them (--keep-delegated), take them back (--drop-delegated), or export them first",
  },
  "grant.bound": {
    section: "§8, §10",
    summary: "a delegate's change would grow the policy in force past the tool's bound; the owner writes a policy that large",
  },
  "grant.changed": {
    section: "§10",
    summary: "the policy in force changed between the decision and its record (a delegate's grant, another apply); decide again over the new one",
  },
  "twogranter.void": {
    section: "§10, §15",
    summary: "the two granters did not sign the same canonical proposal over the current input state; a changed state voids both approvals",
  },
  "role.no-write": {
    section: "§4",
    summary: "observer, diagnostician and verifier hold no write (ownership protocol): a verifier that can write is an actor",
  },
  "teamfile.syntax": {
    section: "§10",
    summary: "the team file is not valid YAML",
  },
  "teamfile.review-mode": {
    section: "§5",
    summary:
      "a seat holds review, gate or merge (or the leads envelope leases one) and the team file names no review mode: write review: { mode: distinct-seat } or { mode: cross-lab }",
  },
  "teamfile.schema": {
    section: "§10",
    summary: "the team file does not match the published schema (docs/team-file.md)",
  },
  "teamfile.unsupported": {
    section: "§2",
    summary: "the team file names a feature not enforced yet; refused rather than accepted and silently unenforced",
  },
  "secret.shape": {
    section: "§11",
    summary: "a team-file value has a known credential shape; teamd does not take the labs' keys",
  },
  // Containment (issue 7): the plan compiler, the launchers and object identity
  // (src/sandbox/, src/objects/). Each refusal also says how to fix it.
  "reserved.link-set": {
    section: "§6",
    summary: "an object's link set cannot be completely established (a hard link whose other names are unknown, a scan that did not finish); fail closed",
  },
  "object.identity": {
    section: "§6",
    summary: "the object's identity (device, inode) cannot be established, or the opened object is not the one checked; fail closed",
  },
  "containment.unavailable": {
    section: "§11",
    summary: "OS containment is not available here (no bubblewrap, user namespaces disabled, a platform not supported yet); the seat does not start",
  },
  "containment.failed": {
    section: "§11",
    summary: "containment exists and failed while a seat was being set up (a bind that failed, a sandbox that could not be built); work stops",
  },
  "containment.selftest-failed": {
    section: "§11",
    summary: "the last `teamd selftest` on this machine found containment broken; no contained seat starts until it passes again",
  },
  "containment.undecidable": {
    section: "§11",
    summary: "the containment plan cannot be decided from the facts given (a non-canonical path, a missing fact, a conflicting root); refused, never guessed",
  },
  "containment.host-root": {
    section: "§11",
    summary: "a seat never runs as host root; a daemon running as root runs seats as an unprivileged user",
  },
  "containment.env": {
    section: "§11",
    summary: "a seat's environment entry is refused (an invalid name or value, or one that would override what teamd sets)",
  },
  "containment.limit": {
    section: "§11",
    summary: "a resource limit the seat asks for cannot be applied here; the seat does not start",
  },
  "team.unknown": {
    section: "§10",
    summary: "the act names a team this machine has not registered (teamd init registers a repository as a team)",
  },
  "team.conflict": {
    section: "§10",
    summary: "the team name is already registered for another repository; a team is one repository",
  },
  // The seat lifecycle (issue 7, daemon/seat-*.ts): what stops a seat from starting.
  "seat.no-start": {
    section: "§10",
    summary: "the seat has no pinned start (command and execution context) in the policy in force; a seat runs its pinned command and nothing else",
  },
  "seat.read-bounded": {
    section: "§6",
    summary: "the seat's read scope is bounded and its repository would be a full clone of trunk; it does not start until filtered histories exist",
  },
  "seat.running": {
    section: "§10",
    summary: "the seat is already running (or starting); one run of a seat at a time",
  },
  "seat.not-running": {
    section: "§10",
    summary: "the act needs a running seat (exec runs inside its exact containment); start the seat first",
  },
  "seat.forward": {
    section: "§12",
    summary:
      "teamd forward could not reach the port on the seat's own loopback (nothing listens there, or the seat's launcher is not connected: a seat forwards only when its start declares start.network)",
  },
  "seat.frozen": {
    section: "§10",
    summary: "the seat is frozen (teamd freeze): nothing runs inside it until the owner thaws it (teamd thaw)",
  },
  "containment.freeze": {
    section: "§11",
    summary: "the seat cannot be frozen here: freezing needs the seat's own v2 cgroup (the daemon as root on a host with cgroup v2)",
  },
  "seat.refusal-budget": {
    section: "§11",
    summary:
      "the seat made more refusals than its budget allows (a sustained rate far above a working agent's); the seat is stopped and the owner told, and it runs again only when the owner starts it",
  },
  "seat.act-budget": {
    section: "§11",
    summary:
      "the seat's acts made more ledger records than its act budget allows (bytes at once, then a rate far above a working agent's); the act is refused until the budget refills, and the seat keeps running",
  },
  "envelope.seats": {
    section: "§8",
    summary:
      "the lab's seat cap (the ceiling's seats) would be passed: a team file declaring more seats of a lab than its cap, or a launch while the lab's live seats already reach it",
  },
  "envelope.runtime": {
    section: "§8",
    summary:
      "the team has run unattended past its runtime (the ceiling's runtime, since the owner's last renewal: an apply of its file or teamd renew); every gated act and start is refused, and its seats frozen or halted, until the owner renews it",
  },
  "envelope.spend": {
    section: "§8",
    summary:
      "a dispatch reserves the per-dispatch maximum and the spend remainder cannot cover it: the node's own remainder (its cap less its reported spend, reservations and carved slices) or the one budget of a tree it is in, in the aggregate or its lab; usage a meter cannot establish counts as spent",
  },
  "envelope.visibility": {
    section: "§8",
    summary:
      "what the seat's lab may see is capped (the ceiling's visibility): a read of a path outside the cap is refused whatever covers it, and a team file or a read lease that would widen the lab's reads past it is refused",
  },
  "ledger.tombstone-kept": {
    section: "§15",
    summary:
      "a tombstone hides a record's content, and this record is one the gate still reads in full (the policy, a team, a lease, a stop or resume, a reconciliation, a trunk act's record, an unresolved intent); it stays whole",
  },
  "ledger.archive-needed": {
    section: "§15",
    summary:
      "an archive's cut would move out a record the gate still reads (the policy in force, a live lease or one it rests on, a revocation, an unresolved intent, a trunk act's record, an unmerged change's authorship, a live run's start, the last renewal); cut before it, settle it, or keep it in the live store (--keep)",
  },
  "seat.served-rate": {
    section: "§3",
    summary:
      "the seat was served more distinct reads than its served-read rate allows (each is a record of what it was shown); the read is refused until the rate refills, and the seat keeps running",
  },
  "seat.start-failed": {
    section: "§11",
    summary:
      "the seat could not be started, or its command ended within the start's settle window: the cause in its own words (a command not in the seat's view, a folder its uid cannot traverse, the command's exit and last lines)",
  },
  "seat.attached": {
    section: "§10",
    summary: "an owner is already attached to the seat's pty; one attacher at a time, so two people's keystrokes never mix in one agent's input",
  },
  "policy.unapplied": {
    section: "§10",
    summary: "the team has no applied policy; seats start only from the policy in force, never from the file on disk",
  },
  "teamfile.tracked": {
    section: "§3",
    summary: "the team file is tracked by git, so copies of it would reach the hub and every seat; it must stay untracked",
  },
  // Delegation (issue 6): leases, the ceiling and the deny, leads as the delegation root.
  "lease.unknown": {
    section: "§7",
    summary: "the lease (or a lease its chain names) is not in the ledger; what cannot be walked is not live",
  },
  "lease.expired": {
    section: "§7",
    summary: "the lease, or a lease above it in its chain, is past its hard expiry",
  },
  "lease.revoked": {
    section: "§7",
    summary: "a revocation record exists for the lease or a lease above it; revoked is monotonic, a restored grant revives nothing",
  },
  "lease.source": {
    section: "§7",
    summary: "the lease's source no longer covers it, or its issuer no longer holds that source (narrowed, removed or reassigned — even at the same scope)",
  },
  "lease.parent": {
    section: "§7",
    summary: "a lease whose issuer acts from a lease names that held, live lease as its mandatory parent; a parentless re-lease is refused",
  },
  "lease.wider": {
    section: "§7",
    summary: "a re-lease is never wider than its parent (capability and scope) and never outlives it",
  },
  "lease.administrative": {
    section: "§7",
    summary: "only operational capabilities are leasable; create, grant, agree and leads never are",
  },
  "lease.no-leads": {
    section: "§9",
    summary: "the team has no leads; no lease of any origin issues (or stays live) without a present leads",
  },
  "lease.ancestor": {
    section: "§7",
    summary: "the whole-chain ban: the recipient may be neither leads, nor the chain's originating issuer, nor any issuer or recipient already in the chain",
  },
  "lease.recipient": {
    section: "§7",
    summary: "a lease binds to an existing member seat by its stable identity; the recipient is not one",
  },
  "lease.ttl": {
    section: "§7, §8",
    summary: "the lease asks for a lifetime past the ceiling's lease-ttl (itself under the tool maximum), or an expiry not after its issue time",
  },
  "lease.two-granter": {
    section: "§10",
    summary: "the capability is behind two-granter agreement: only a lease co-signed by two granters, the issuer one of them, issues it",
  },
  "lease.revoker": {
    section: "§7, §9",
    summary: "a lease is revoked by the owner, leads, or an issuer above it in its chain; this principal is none of them",
  },
  "ceiling.outside": {
    section: "§8",
    summary: "the effect (or the lease) lies outside the owner's ceiling; outside it is unreachable even if a role, lease or envelope names it",
  },
  "deny.match": {
    section: "§8",
    summary: "the owner's explicit deny covers the effect (or the lease); deny wins through every role, lease and envelope",
  },
  "leads.two": {
    section: "§9",
    summary: "a team has zero or one leads; two are refused",
  },
  // Seat git and files (issue 8, daemon/seat/git.ts, daemon/seat/files.ts).
  "push.ref": {
    section: "§3",
    summary: "a seat pushes only to its own seat/<name>/ branches; the trunk and other seats' branches change only through trunk acts",
  },
  "push.pack": {
    section: "§11",
    summary: "the pushed pack is corrupt, incomplete or too large; nothing of it reaches the hub (fail closed)",
  },
  "push.commit-text": {
    section: "§11",
    summary:
      "a pushed commit's message or identity is not UTF-8 or carries a terminal control (ESC, another C0 but tab and newline, C1, a bidirectional override): git log would play it to whoever reads the history",
  },
  "push.stale": {
    section: "§15",
    summary: "the destination branch is not where the seat believed it was; fetch, then push again",
  },
  "push.bounded-merge": {
    section: "§6",
    summary: "a seat that may read only part of the repository pushes linear history (its merges cannot be replayed onto what it cannot read)",
  },
  "fetch.ref": {
    section: "§3",
    summary: "a seat fetches only the trunk, its own seat/<name>/ branches and the branches it holds review or gate over",
  },
  // Bounds on the daemon's work for a seat (issue 20, DESIGN.md "The daemon never works for a seat unbounded").
  "push.pack-objects": {
    section: "§11",
    summary: "the pushed pack declares more objects than one push may carry; it is refused before git reads it",
  },
  "push.object-size": {
    section: "§11",
    summary:
      "an object of the pushed pack (or a delta's result, or all of them together) declares more bytes than a push may expand to; refused before git reads it",
  },
  "push.paths": {
    section: "§11",
    summary: "the push changes more paths than one push may (trees that name one another list millions from a few bytes); push in smaller steps",
  },
  "push.ref-updates": {
    section: "§11",
    summary: "the push names more ref updates than one push may make; push in smaller steps",
  },
  "push.quota": {
    section: "§11",
    summary: "the seat's branches in the hub would hold more refs or more pushed bytes than its storage quota; delete branches it no longer needs",
  },
  "git.concurrent": {
    section: "§11",
    summary: "the seat has as many fetches and pushes running as it may; one finishes before the next starts",
  },
  "trunk.ref": {
    section: "§3",
    summary: "the branch or trunk a trunk act names does not exist in the hub (name it as the hub does: seat/<name>/<branch>)",
  },
  "trunk.conflict": {
    section: "§15",
    summary: "the branch does not merge cleanly into the trunk, so there is no one artifact to review, gate or merge; rebase it first",
  },
  "trunk.moved": {
    section: "§15",
    summary: "the trunk or the branch moved between the decision and the merge; nothing was merged — the changed artifact is decided again",
  },
  "trunk.nothing": {
    section: "§15",
    summary: "the branch holds no commit the trunk lacks; there is no change to act on",
  },
  "file.kind": {
    section: "§6",
    summary: "the path names no regular file the act can read or write (a directory, a symlink or a submodule)",
  },
  // Unknown means unknown (issue 20, src/kernel/git-names.ts): what git would refuse is refused before any intent.
  "git.ref-name": {
    section: "§15",
    summary:
      "the ref name is not one git accepts (git check-ref-format), or cannot live beside a ref that exists (a ref and a folder of refs); refused before any intent",
  },
  "git.path": {
    section: "§3",
    summary:
      "the path is not one git accepts in a tree (an empty, . or .. component, .git or an HFS+ or NTFS alias of it, a name longer than a checkout can make); refused before any intent",
  },
  "git.message": {
    section: "§15",
    summary: "the commit message cannot be handed to git (a NUL byte, or longer than the daemon passes); refused before any intent",
  },
  "git.ref-busy": {
    section: "§15",
    summary: "the ref stayed locked by a concurrent update through every retry; nothing moved — act again",
  },
  // Deploy (issue 9): the owner's hash-pinned command per environment, run outside the sandbox.
  "deploy.command": {
    section: "§10",
    summary: "the environment has no deploy command in the policy in force; only the owner's declared, hash-pinned command ever runs",
  },
  "deploy.unpinned": {
    section: "§10",
    summary: "a file the deploy command pins is missing or changed since the owner applied it; the owner reviews it and runs teamd apply to pin it",
  },
  "start.unpinned": {
    section: "§10",
    summary:
      "a start file the seat's start pins is missing or changed since the owner applied it (in the owner's repository), or the seat's clone holds no regular file at its path; the owner reviews it and runs teamd apply, or restores the seat's copy",
  },
  "deploy.artifact": {
    section: "§15",
    summary: "the artifact is not a commit the trunk holds (or no gated change made it), so no effect id can be computed for it",
  },
  "deploy.failed": {
    section: "§15",
    summary: "the deploy command ran and failed (non-zero exit, killed, timed out); its refused outcome voids the artifact's pass in every environment",
  },
  // act-as (§3, §11): the owner's external identity, used only through a command teamd mediates.
  "act-as.unmediated": {
    section: "§3",
    summary:
      "the request names an owner's account for an act teamd performs under no account (broker pull, read or claim; a deploy whose environment declares no account); drop --as",
  },
  "act-as.required": {
    section: "§3",
    summary:
      "the act runs under the owner's account (a broker comment; a push to the environment's remote) and the request names none, or names another than the one the owner declared for it",
  },
  "act-as.credential": {
    section: "§11",
    summary:
      "the account has no usable credential in the owner's configuration (missing, undeclared in the team file, or the file unsafe); the owner fixes the configuration, never the seat",
  },
  "deploy.push": {
    section: "§15",
    summary:
      "the push of the artifact to the environment's remote failed (rejected, refused credential, unreachable); its refused outcome voids the artifact's pass like a failed deploy command",
  },
  // Network egress (issue 11): decided by the daemon for each connection a seat's proxy forwards.
  "egress.host": {
    section: "§12",
    summary: "the connection's host:port (the CONNECT target or request URL, never a header) is not in the seat's declared egress",
  },
  "egress.address": {
    section: "§12",
    summary: "the target resolves to a loopback, link-local, private, unspecified, multicast or host-own address outside the ranges the seat declares",
  },
  "egress.resolve": {
    section: "§11",
    summary: "the target's name could not be resolved; a connection teamd cannot place is refused",
  },
  "egress.limit": {
    section: "§12",
    summary: "the seat has as many open egress connections as it may; one closes before the next opens",
  },
} as const satisfies Record<string, { section: string; summary: string }>;

export type RuleId = keyof typeof RULES;

export function isRuleId(value: string): value is RuleId {
  return Object.prototype.hasOwnProperty.call(RULES, value);
}

/**
 * The rule a refused outcome's note names, as the daemon writes a deterministic refusal inside
 * an effect (`<rule>: <reason>`), or undefined for a note that names none.
 */
export function noteRule(note: string): { readonly rule: RuleId; readonly reason: string } | undefined {
  const at = note.indexOf(": ");
  if (at <= 0) return undefined;
  const rule = note.slice(0, at);
  return isRuleId(rule) ? { rule, reason: note.slice(at + 2) } : undefined;
}
