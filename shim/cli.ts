import { readFile } from "node:fs/promises";
import { Command } from "commander";
import { TEAMD_VERSION } from "../src/rpc/protocol.js";
import { DEFAULT_SOCKET, usage } from "./seat-socket.js";

export { socketPath } from "./seat-socket.js";

/**
 * `teamd-shim`: the one program inside a seat that can reach the daemon. It holds no
 * policy, no keys and no ledger (it imports only src/gen and src/rpc); it asks, and
 * prints what the daemon answered. Run as `git-remote-teamd` (the same bundle under a
 * second name on the seat's PATH) it is git's remote helper for the `teamd` remote.
 *
 * Each action imports the acts (commands.ts: the gRPC client and the generated messages) when
 * it runs, so `--version`, `--help` and a usage error load neither (issue 26).
 */
const acts = () => import("./commands.js");

/** The `teamd-shim` command tree (also walked by scripts/cli-reference.ts for the docs). */
export function buildProgram(): Command {
  const program = new Command("teamd-shim")
    .description(`Talk to the teamd daemon from inside a seat (socket: $TEAMD_SOCKET, default ${DEFAULT_SOCKET}).`)
    .version(TEAMD_VERSION, "-V, --version")
    .showHelpAfterError("(run `teamd-shim --help` for the list of commands)")
    .showSuggestionAfterError(true)
    .exitOverride();
  program
    .command("whoami")
    .description("this seat's identity, the capabilities it holds and its last refusal")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { json?: boolean }) => (await import("./whoami.js")).whoami(opts));
  program
    .command("checkpoint")
    .argument("[note]", "where you stand and what comes next (at most 4 KiB; never a secret)")
    .option("--last", "print the handoff checkpoint teamd built when it halted this seat's previous run (read-only; given at this run's start)")
    .option("--json", "print one JSON object")
    .description("record a checkpoint note in the ledger, or (--last) read the handoff this run was given")
    .action(async (note: string | undefined, opts: { json?: boolean; last?: boolean }) => {
      if (opts.last === true) {
        if (note !== undefined) throw new Error("checkpoint --last reads the handoff; it takes no note");
        return (await import("./handoff.js")).lastCheckpoint(opts);
      }
      if (note === undefined) throw new Error("checkpoint needs a note (or --last to read the handoff this run was given)");
      return (await acts()).checkpoint(note, opts);
    });
  const into = "--into <trunk>";
  const intoHelp = "the trunk it merges into (default: the hub's default branch)";
  program
    .command("review")
    .argument("<branch>", "the branch under review, as the hub names it (seat/NAME/BRANCH)")
    .option("--approve", "approve the change")
    .option("--reject", "reject the change")
    .option(into, intoHelp)
    .option("--json", "print one JSON object")
    .description("record a verdict on another seat's change (fetch it first: git fetch teamd)")
    .action(async (branch: string, opts: { approve?: boolean; reject?: boolean; into?: string; json?: boolean }) => (await acts()).review(branch, opts));
  program
    .command("gate")
    .argument("<branch>", "the branch to gate (seat/NAME/BRANCH)")
    .option("--pass", "the change passes the gate")
    .option("--fail", "the change fails the gate")
    .option(into, intoHelp)
    .option("--json", "print one JSON object")
    .description("record a gate decision bound to the change's effect id")
    .action(async (branch: string, opts: { pass?: boolean; fail?: boolean; into?: string; json?: boolean }) => (await acts()).gate(branch, opts));
  program
    .command("merge")
    .argument("<branch>", "the gated branch to merge (seat/NAME/BRANCH)")
    .option(into, intoHelp)
    .option("--json", "print one JSON object")
    .description("merge a gated change into the trunk (the daemon merges in the hub; the pass is consumed)")
    .action(async (branch: string, opts: { into?: string; json?: boolean }) => (await acts()).merge(branch, opts));
  const lease = program.command("lease").description("leases (§7): hand a capability you hold to another seat for a bounded time, recorded");
  lease
    .command("issue")
    .argument("<seat>", "the recipient: another seat of your team")
    .argument("<capability>", "an operational capability you hold (merge, gate, write, ...)")
    .argument("<scope>", "'*' for all you may lease, or dimension=value pairs: branch=main,path=src/")
    .requiredOption("--ttl <duration>", "how long it lasts (e.g. 30m, 2h; within the owner's lease-ttl)")
    .option("--parent <lease>", "a re-lease: the lease you hold that it attenuates")
    .option("--source <authority>", "a root lease: the standing grant (or, for leads, envelope entry) it is drawn from")
    .option("--json", "print one JSON object")
    .description("issue a lease, decided by the kernel and recorded")
    .action(async (recipient: string, capability: string, scope: string, opts: { ttl: string; parent?: string; source?: string; json?: boolean }) =>
      (await acts()).leaseIssue(recipient, capability, scope, opts),
    );
  lease
    .command("revoke")
    .argument("<lease>", "the lease id")
    .option("--json", "print one JSON object")
    .description("revoke a lease you issued or sit above, and every lease below it")
    .action(async (leaseId: string, opts: { json?: boolean }) => (await acts()).leaseRevoke(leaseId, opts));
  lease
    .command("list")
    .option("--json", "print one JSON object")
    .description("your own live leases (a lease you issued is in its issue's reply)")
    .action(async (opts: { json?: boolean }) => (await acts()).leaseList(opts));
  program
    .command("grant")
    .argument("<seat>", "the seat of your team to give it to")
    .argument("<capability>", "an operational capability (write, read, review, gate, merge, deploy, use-broker, act-as)")
    .argument("<scope>", "'*' for unconstrained, or dimension=value pairs: branch=main,path=src/")
    .option("--name <name>", "the grant's name, when the seat already holds this capability (§7)")
    .option("--json", "print one JSON object")
    .description("as a grant holder (§10): give a seat a capability inside the owner's ceiling — a new policy in force, recorded")
    .action(async (seat: string, capability: string, scope: string, opts: { name?: string; json?: boolean }) =>
      (await acts()).grant(seat, capability, scope, opts),
    );
  program
    .command("ungrant")
    .argument("<seat>", "the seat")
    .argument("<capability>", "the capability of its direct grant to take back")
    .option("--name <name>", "which grant, when the seat holds several of the capability")
    .option("--json", "print one JSON object")
    .description("as a grant holder (§10): take back one of a seat's direct grants, with the leases rooted in it")
    .action(async (seat: string, capability: string, opts: { name?: string; json?: boolean }) => (await acts()).ungrant(seat, capability, opts));
  const seatCommand = program.command("seat").description("seats of your team (§9): add one as a grant or agree holder, remove one as leads");
  seatCommand
    .command("add")
    .argument("<name>", "the new seat's name")
    .requiredOption("--like <seat>", "the existing seat it copies (lab, roles, capabilities, start; never grant, agree or leads)")
    .option("--role <role...>", "roles to add to the copy (then it is a grant, not a same copy)")
    .option("--json", "print one JSON object")
    .description("add a seat: a same copy needs agree, anything else grant (§9, §10)")
    .action(async (name: string, opts: { like: string; role?: string[]; json?: boolean }) => (await acts()).seatAdd(name, opts));
  seatCommand
    .command("remove")
    .argument("<name>", "the seat to remove")
    .option("--json", "print one JSON object")
    .description("as leads (§9): remove a seat of your team, with every lease it holds or issued; a grant, agree or leads holder is the owner's to remove")
    .action(async (name: string, opts: { json?: boolean }) => (await acts()).seatRemove(name, opts));
  program
    .command("notices")
    .option("--after <seq>", "only notices after this record (the previous call's next)")
    .option("--json", "print one JSON object")
    .description("as leads, the team-level address (§9): your team's notices — what happened, never content")
    .action(async (opts: { after?: string; json?: boolean }) => (await acts()).teamNotices(opts));
  program
    .command("create")
    .argument("<FILE>", "the child team's file (YAML), as you wrote it")
    .requiredOption("--root <DIR>", "one of the repository roots your create-bound names: the child's repository")
    .option("--json", "print one JSON object")
    .description("with create (§10): a team of your making, within the create-bound the owner wrote on the machine; recorded as your act")
    .action(async (file: string, opts: { root: string; json?: boolean }) => (await acts()).createTeam(file, opts));
  program
    .command("start-team")
    .argument("[SEAT]", "one seat of your team (default: every seat with a start that does not run)")
    .option("--json", "print one JSON object")
    .description("as leads (§9): start your own team, or one seat of it — its pinned start only; a stopped team waits for the owner's teamd resume")
    .action(async (seat: string | undefined, opts: { json?: boolean }) => (await acts()).startTeam(seat, opts));
  program
    .command("stop-team")
    .option("--reason <text>", "why, in a line (recorded; the owner is told)")
    .option("--json", "print one JSON object")
    .description("as leads (§9): stop your team — every seat of it, this one too; it holds until the owner's teamd resume")
    .action(async (opts: { reason?: string; json?: boolean }) => (await acts()).stopTeam(opts));
  program
    .command("proposals")
    .option("--json", "print one JSON object")
    .description("the two-granter proposals waiting for your confirmation (§10), each the one change it makes")
    .action(async (opts: { json?: boolean }) => (await acts()).proposals(opts));
  program
    .command("confirm")
    .argument("<proposal>", "the proposal id (teamd-shim proposals)")
    .option("--json", "print one JSON object")
    .description("as the second granter (§10): confirm a proposal over the same input state; it commits, recorded with both of you")
    .action(async (proposal: string, opts: { json?: boolean }) => (await acts()).confirm(proposal, opts));
  program
    .command("deploy")
    .argument("<env>", "a declared environment with an owner-declared deploy command or push")
    .option("--artifact <commit>", "the commit of the trunk to ship (default: the trunk's head)")
    .option(
      "--as <account>",
      "the owner's account the environment pushes under (act-as; default: the one the team file declares for it); refused for an environment that runs a command",
    )
    .option("--json", "print one JSON object")
    .description(
      "run the owner's hash-pinned deploy command for <env>, or push to its declared remote under the owner's account, on a gated artifact (a failure voids the pass)",
    )
    .action(async (env: string, opts: { artifact?: string; as?: string; json?: boolean }) => (await acts()).deploy(env, opts));
  const brokerCmd = program
    .command("broker")
    .description(
      "tracker tasks through the secret broker (§11): needs use-broker over the task resource; the seat never holds the tracker's or the owner's credential",
    );
  const brokerAs = ["--as <account>", "refused (act-as.unmediated): pull, read and claim run under the tracker's credential, not an owner's account"] as const;
  brokerCmd
    .command("pull")
    .argument("<task>", "a declared task resource (declare.tasks)")
    .option("--json", "print one JSON object")
    .option(...brokerAs)
    .description("list the resource's open tasks (id, title, state, labels, assignee, url)")
    .action(async (task: string, opts: { json?: boolean; as?: string }) => (await acts()).broker("pull", task, undefined, opts));
  brokerCmd
    .command("read")
    .argument("<task>", "a declared task resource")
    .argument("<id>", "the task: an issue number, a task file's name")
    .option("--json", "print one JSON object")
    .option(...brokerAs)
    .description("one task's non-secret fields: title, body, state, labels, assignee, url")
    .action(async (task: string, id: string, opts: { json?: boolean; as?: string }) => (await acts()).broker("read", task, id, opts));
  brokerCmd
    .command("claim")
    .argument("<task>", "a declared task resource")
    .argument("<id>", "the task to claim")
    .option("--json", "print one JSON object")
    .option(...brokerAs)
    .description("mark the task claimed by this seat (a label on GitHub, claimed-by in a task file), recorded")
    .action(async (task: string, id: string, opts: { json?: boolean; as?: string }) => (await acts()).broker("claim", task, id, opts));
  brokerCmd
    .command("comment")
    .argument("<task>", "a declared task resource")
    .argument("<id>", "the task to comment on")
    .requiredOption("--as <account>", "the owner's account the comment is made under (needs act-as over it, besides use-broker)")
    .option("-m, --message <text>", "the comment's text")
    .option("--file <path>", "read the comment's text from this file")
    .option("--json", "print one JSON object")
    .description(
      "comment on the task under the owner's account, posted by the daemon with the account's credential (at most 32 KiB; recorded by length and hash, never the text)",
    )
    .action(async (task: string, id: string, opts: { json?: boolean; as: string; message?: string; file?: string }) => {
      if ((opts.message === undefined) === (opts.file === undefined)) usage("give the comment's text with -m TEXT or --file PATH (one of them)");
      const body = opts.message ?? (await readFile(opts.file as string, "utf8"));
      await (await acts()).broker("comment", task, id, { ...opts, body });
    });
  const file = program.command("file").description("one file of the team's repository through the daemon (decided as read or write over its path)");
  file
    .command("stat")
    .argument("<path>", "repository-relative path")
    .option("--json", "print one JSON object")
    .description("kind, size and object name of a file on the trunk")
    .action(async (path: string, opts: { json?: boolean }) => (await acts()).fileStat(path, opts));
  file
    .command("read")
    .argument("<path>", "repository-relative path")
    .description("print a file of the trunk to stdout")
    .action(async (path: string) => (await acts()).fileRead(path));
  file
    .command("write")
    .argument("<path>", "repository-relative path")
    .option("--from <file>", "read the content from this file (default: stdin)")
    .option("--branch <name>", "commit onto seat/<you>/<name> (default: the trunk's name)")
    .option("-m, --message <text>", "the commit message")
    .option("--json", "print one JSON object")
    .description("commit new content for a file onto your own branch in the hub")
    .action(async (path: string, opts: { from?: string; branch?: string; message?: string; json?: boolean }) => (await acts()).fileWrite(path, opts));
  return program;
}
