import { Command } from "commander";
import { HELP_AFTER_ERROR } from "./help-text.js";
import { UsageError } from "../src/rpc/errors.js";
import { TEAMD_VERSION } from "../src/rpc/protocol.js";
import type { InitOptions } from "./commands/init.js";
import type { LogOptions } from "./commands/log.js";
import type { LogsOptions } from "./commands/logs.js";
import type { EgressRefusedOptions } from "./commands/egress.js";
import type { ForwardOptions } from "./commands/forward.js";
import { REAL_AMBIENT, type Ambient } from "./host/ambient.js";

/*
 * Each action imports its command's module when it runs, never before: `teamd --version`,
 * `--help` and a usage error load commander and this file, not the daemon, grpc-js, the
 * generated messages or SQLite (issue 26; test/daemon/cli-loading.test.ts).
 */
const serve = async () => (await import("./server/serve.js")).serve;
const status = async () => (await import("./client-commands.js")).status;
const kernelEval = async () => (await import("./commands/kernel-eval.js")).kernelEval;
const init = async () => (await import("./commands/init.js")).init;
const apply = async () => (await import("./commands/apply.js")).apply;
const log = async () => (await import("./commands/log.js")).log;
const logsCommand = async () => (await import("./commands/logs.js")).logsCommand;
const egressRefusedCommand = async () => (await import("./commands/egress.js")).egressRefusedCommand;
const forwardCommand = async () => (await import("./commands/forward.js")).forwardCommand;
const noticeCommands = () => import("./commands/notices.js");
const verify = async () => (await import("./commands/verify.js")).verify;
const checkpointShow = async () => (await import("./commands/checkpoint.js")).checkpointShow;
const ledgerReconcile = () => import("./commands/ledger-reconcile.js");
const tombstone = async () => (await import("./commands/tombstone.js")).tombstoneCommand;
const archive = async () => (await import("./commands/archive.js")).archiveCommand;
const renew = async () => (await import("./commands/renew.js")).renewCommand;
const seatCommands = () => import("./client-commands.js");
const doctor = async () => (await import("./commands/doctor.js")).doctor;
const selftest = async () => (await import("./commands/selftest.js")).selftestCommand;
const stopAllCommand = async () => (await import("./commands/stop-all.js")).stopAllCommand;
const resumeCommand = async () => (await import("./commands/resume.js")).resumeCommand;
const leaseCommands = () => import("./commands/lease.js");

/**
 * `teamd`: the owner's program. Thin: each subcommand parses its flags and calls one
 * function; policy lives in src/. The clock and the id source come in here, once (the real
 * ones by default: host/ambient.ts), and go to every subcommand that reads them.
 */
export function buildProgram(ambient: Ambient = REAL_AMBIENT): Command {
  const program = new Command("teamd")
    .description("Supervise a team of AI coding agents, each in an OS-contained seat, deciding every gated act.")
    .version(TEAMD_VERSION, "-V, --version")
    .showHelpAfterError(HELP_AFTER_ERROR)
    .showSuggestionAfterError(true)
    .exitOverride()
    .enablePositionalOptions();

  program
    .command("serve")
    .description("run the daemon in the foreground (state in TEAMD_HOME); SIGTERM or SIGINT stops it and removes its sockets")
    .option(
      "--seat <SEAT[@TEAM]>",
      "debug: open a socket for this seat (repeatable; team defaults to 'debug')",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .action(async (opts: { seat: string[] }) => (await serve())(opts, ambient));

  program
    .command("status")
    .description(
      "show the daemon, the ledger's head, the stops in force, each team's policy against its file on disk, and the running seats (--json: docs/status.md)",
    )
    .option("--json", "print one JSON object (for scripts)")
    .option("--socket <PATH>", "the control socket (default: TEAMD_HOME/run/control.sock)")
    .action(async (opts: { json?: boolean; socket?: string }) => (await status())(opts, ambient));

  program
    .command("start")
    .description("start a seat (or every seat of a team) from the team's applied policy, contained")
    .argument("[SEAT]", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the team (alone: every seat of it that has a start)")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seat: string | undefined, opts: { team?: string; json?: boolean }) => (await seatCommands()).startCommand(seat, opts));

  program
    .command("stop")
    .description(
      "stop a seat: its processes end, its socket goes; its repository and home stay. --team alone: the team's stop, which holds (every start and gated act of it refused) until teamd resume --team. --all: the machine-wide stop, until teamd resume",
    )
    .argument("[SEAT]", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the seat's team; alone (no SEAT): stop the team — signed, it holds with the daemon or the ledger down and across restarts")
    .option("--all", "stop every seat of every team and refuse every start until teamd resume (signed; works with the daemon hung or down)")
    .option("--reason <TEXT>", "why, in your words (recorded with a team's or the machine's stop)")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seat: string | undefined, opts: { team?: string; all?: boolean; reason?: string; json?: boolean }) => {
      if (opts.all) {
        if (seat !== undefined || opts.team !== undefined) throw new UsageError("--all stops every seat of every team: name no seat and no --team");
        return (await stopAllCommand())(opts, ambient);
      }
      // §9, §15: a team's stop is a durable, signed stop of that team only (it used to kill its running seats and no more).
      if (seat === undefined && opts.team !== undefined) return (await stopAllCommand())({ ...opts, team: opts.team }, ambient);
      return (await seatCommands()).stopCommand(seat, opts);
    });

  program
    .command("halt")
    .description(
      "halt a running seat (or every running seat of a team): SIGTERM, a short grace, the kill; its run ends suspended and teamd records a handoff checkpoint its next run is given (teamd checkpoint show)",
    )
    .argument("[SEAT]", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the team (alone: every running seat of it)")
    .option("--reason <TEXT>", "why, in your words (recorded with the stop and the checkpoint)")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seat: string | undefined, opts: { team?: string; reason?: string; json?: boolean }) => (await seatCommands()).haltCommand(seat, opts));

  program
    .command("checkpoint")
    .description("the handoff checkpoints teamd built when it halted a seat's run")
    .command("show")
    .description("show a seat's last handoff checkpoint: facts with their records, its own notes as hypotheses (read from the ledger; the daemon may be down)")
    .argument("<SEAT>", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the seat's team")
    .option("--json", "print the handoff document with its record (for scripts)")
    .action(async (seat: string, opts: { team?: string; json?: boolean }) => (await checkpointShow())(seat, opts));

  program
    .command("freeze")
    .description("freeze a running seat: every process of it stops where it stands until teamd thaw (recorded; needs the seat's own v2 cgroup)")
    .argument("<SEAT>", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the seat's team")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seat: string, opts: { team?: string; json?: boolean }) => (await seatCommands()).freezeCommand(seat, { ...opts, thaw: false }));

  program
    .command("thaw")
    .description("let a frozen seat run on where it stopped (recorded)")
    .argument("<SEAT>", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the seat's team")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seat: string, opts: { team?: string; json?: boolean }) => (await seatCommands()).freezeCommand(seat, { ...opts, thaw: true }));

  program
    .command("resume")
    .description("clear the owner's stops (teamd stop --all, teamd stop --team): an owner act, signed; only it clears a stop, whoever raised it")
    .option("--team <TEAM>", "clear only this team's stop (a machine-wide stop stays)")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { team?: string; json?: boolean }) => (await resumeCommand())(opts, ambient));

  program
    .command("exec")
    .description("run one command inside a running seat's exact containment (recorded, never its output); its output streams as it runs, its exit code is ours")
    .argument("<SEAT>", "the seat, as SEAT or SEAT@TEAM")
    .argument("<CMD...>", "the command and its arguments, after --")
    .option("--team <TEAM>", "the seat's team")
    .option("--timeout <SECONDS>", "kill the command after this long (default 60; 0: no limit)")
    .option("-i, --interactive", "pass our standard input to the command (read to its end first, at most 16 MiB); without it the command's stdin is empty")
    .option("-t, --tty", "run the command in a pty of its own, our terminal at it (as attach: raw, filtered); Ctrl-] leaves and kills it; needs a terminal")
    // Flags go before or after SEAT; everything after `--` is the command's own (no passThroughOptions).
    .action(async (seat: string, command: string[], opts: { team?: string; timeout?: string; interactive?: boolean; tty?: boolean }) =>
      (await seatCommands()).execCommand(seat, command, opts),
    );

  program
    .command("attach")
    .description(
      "the owner's terminal at a running seat's pty: the last 64 KiB of its output, then live; detach with Ctrl-] (recorded: who and when, never what is shown or typed; one attacher at a time; needs a terminal)",
    )
    .argument("<SEAT>", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the team")
    .action(async (seat: string, opts: { team?: string }) => (await seatCommands()).attachCommand(seat, opts));

  program
    .command("doctor")
    .description("check whether seats can start here: bubblewrap, user namespaces, the seat user, cgroups, the shim bundle; a verdict per check")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { json?: boolean }) => (await doctor())(opts, ambient));

  program
    .command("selftest")
    .description(
      "attack containment on this machine from inside throwaway seats (every host-bound row of docs/enforcement.md, each with its control) and print the enforcement map for this host; recorded for start, status and doctor; exit 1 unless every row holds as documented (--json: teamd.selftest/1, docs/selftest.md)",
    )
    .option("--json", "print the teamd.selftest/1 document (for scripts and monitoring)")
    .option("--only <ROW...>", "run only these rows or attacks (ids as --json names them); a partial run is recorded only when it fails")
    .action(async (opts: { json?: boolean; only?: string[] }) => (await selftest())(opts, ambient));

  program
    .command("init")
    .description("set up teamd for this repository: owner key, TEAMD_HOME, ledger, the hub (remote 'teamd') and an untracked teamd.yaml")
    .option("--repo <DIR>", "the repository (default: the one around the current directory)")
    .option("--team <NAME>", "the team's name (default: from the repository's directory name)")
    .option("--passphrase", "protect a new owner key with a passphrase (asked on the terminal)")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: InitOptions) => (await init())(opts, ambient));

  program
    .command("apply")
    .description("sign the team file and make it the policy in force (nothing on disk is in force until applied)")
    .argument("[FILE]", "the team file (default: teamd.yaml at the repository root)")
    .option("--yes", "do not ask for confirmation")
    .option("--keep-delegated", "delegated grants in force that your file does not say: apply your file with them kept (§10)")
    .option("--drop-delegated", "delegated grants in force that your file does not say: take them back, with the leases rooted in them")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (file: string | undefined, opts: { yes?: boolean; json?: boolean; keepDelegated?: boolean; dropDelegated?: boolean }) =>
      (await apply())(file, opts, ambient),
    );

  program
    .command("abandon")
    .description("owner only (§9): leave the team without leads and revoke every live lease in it, in one signed act")
    .requiredOption("--team <TEAM>", "the team")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { team: string; yes?: boolean; json?: boolean }) => (await import("./commands/abandon.js")).abandonCommand(opts, ambient));

  program
    .command("rebind")
    .description("owner only (§8): bind a seat to another lab; every lease it holds or issued is revoked in the same act, and its runtime keeps counting")
    .argument("<SEAT@TEAM>", "the seat")
    .requiredOption("--lab <LAB>", "the lab it is bound to from now (one the team declares)")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (ref: string, opts: { lab: string; yes?: boolean; json?: boolean }) =>
      (await import("./commands/rebind.js")).rebindCommand(ref, opts, ambient),
    );

  const collect = (value: string, previous: string[] = []) => [...previous, value];
  const bounds = program
    .command("create-bounds")
    .description("owner only (§10): which seat may create teams, and within what — written on the machine, signed by you, never in a team file");
  bounds
    .command("set")
    .description("write SEAT@TEAM's create-bound (it replaces the one before; the teams made under the old one stay, and the new one counts afresh)")
    .argument("<SEAT@TEAM>", "the creating seat (it must also hold `create: ~` in its own capabilities)")
    .option("--teams <N>", "how many teams it may create under this bound (default 1)")
    .option("--root <DIR>", "a repository a child team may live at (repeat; one child per root)", collect)
    .option("--start <COMMAND>", "a start command a child's seats may pin: a JSON array or words (repeat)", collect)
    .option("--also-start", "creating also starts the child's seats")
    .option("--grant", "a child's seat may be given grant or agree (off unless given)")
    .option("--spend <AMOUNT>", "the child's aggregate spend slice, carved from the creator's remainder")
    .option("--lab <LAB:spend=AMOUNT,seats=N>", "one lab's part of the slice: its spend and its seat allowance (repeat)", collect)
    .option("--runtime <DURATION>", "an explicit child-runtime window (default: the child runs down the creator's remaining runtime)")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (ref: string, opts: Record<string, unknown>) => (await import("./commands/create-bounds.js")).createBoundsSet(ref, opts, ambient));
  bounds
    .command("show")
    .description("the create-bounds in force, each with the teams made under it")
    .argument("[SEAT@TEAM]", "only this seat's")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (ref: string | undefined, opts: { json?: boolean }) => (await import("./commands/create-bounds.js")).createBoundsShow(ref, opts));
  bounds
    .command("clear")
    .description("clear SEAT@TEAM's create-bound: it creates nothing more (the teams it made stay)")
    .argument("<SEAT@TEAM>", "the creating seat")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (ref: string, opts: { json?: boolean }) => (await import("./commands/create-bounds.js")).createBoundsClear(ref, opts, ambient));

  program
    .command("policy")
    .description("the policy in force (§10): what the owner applied, with any delegated grants since")
    .command("export")
    .description("write the policy in force to the team file (the file it replaces is kept as FILE.before-export); teamd apply then makes it yours")
    .argument("[FILE]", "where to write it (default: teamd.yaml at the repository root)")
    .option("--team <TEAM>", "the team (default: the one the file names)")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (file: string | undefined, opts: { team?: string; json?: boolean }) =>
      (await import("./commands/policy-export.js")).policyExport(file, opts, ambient),
    );

  program
    .command("logs")
    .description("what a seat's command printed, kept per run after it ends (plain text: its terminal escapes dropped); the ledger's records are teamd log")
    .argument("<SEAT>", "the seat, as SEAT or SEAT@TEAM")
    .option("--team <TEAM>", "the seat's team")
    .option("--run <ID>", "this run (default: the latest; --runs lists them)")
    .option("--runs", "list the seat's kept runs: id, start, how each ended, bytes")
    .option("-f, --follow", "keep printing what the run writes until it ends (Ctrl-C to stop)")
    .option("-n, --lines <N>", "only the last N lines")
    .option("--raw", "the bytes as the seat's terminal got them, escapes and all (to a file or a pipe only)")
    .option("--json", "one JSON object (with --follow: one per line)")
    .action(async (seat: string, opts: LogsOptions) => (await logsCommand())(seat, opts));

  program
    .command("log")
    .description(
      "show the ledger's records: seq, time, type, team, actor, action, target, result, and what each says (a refusal's reason, an outcome's note, an act's fields)",
    )
    .argument("[SEAT]", "(none: a seat's output is teamd logs SEAT)")
    .option("--json", "one JSON object per record (JSON lines)")
    .option("--type <TYPE>", "only records of this type (e.g. policy, intent, outcome, refusal, stop)")
    .option("--follow", "keep printing records as they are appended (first the last 10, or -n N; Ctrl-C to stop)")
    .option("--team <TEAM>", "only this team's records")
    .option("--seat <SEAT>", "only this seat's records: its acts and the records about it")
    .option("--since <WHEN>", "only records from this long ago (30m, 2h, 1d) or this time (RFC 3339) on")
    .option("-n, --lines <N>", "only the last N matching records")
    .action(async (seat: string | undefined, opts: LogOptions) => {
      if (seat !== undefined)
        throw new UsageError(
          `teamd log is the ledger's records and takes no seat; what seat ${seat} printed is: teamd logs ${seat}; its records: teamd log --seat ${seat}`,
        );
      return (await log())(opts, ambient);
    });

  program
    .command("forward")
    .description(
      "while it runs, a loopback port on this machine reaches a port on a running seat's own loopback (for a login's callback), one connection at a time, recorded; any local user can reach it meanwhile",
    )
    .argument("<SEAT>", "the seat (SEAT or SEAT@TEAM): running, its start declaring start.network")
    .argument("<PORT>", "the port on the seat's loopback")
    .option("--team <TEAM>", "the seat's team")
    .option("--local <PORT>", "the port on this machine's 127.0.0.1 (default: the same; 0: any free one)")
    .action(async (seat: string, port: string, opts: ForwardOptions) => (await forwardCommand())(seat, port, opts));

  const egress = program.command("egress").description("a seat's network egress (§12): what was refused, and the allow lines that would let it through");
  egress
    .command("refused")
    .description(
      "the hosts seats were refused, one line per seat and host with a count, and the start.network.allow lines that would allow them (it changes nothing: you edit teamd.yaml and apply)",
    )
    .argument("[SEAT]", "only this seat (SEAT or SEAT@TEAM)")
    .option("--team <TEAM>", "only this team's seats")
    .option("--since <WHEN>", "only refusals from this long ago (30m, 2h, 1d) or this time (RFC 3339) on")
    .option("--json", "one JSON object per seat and host (JSON lines), with the allow pattern where one would cure it")
    .action(async (seat: string | undefined, opts: EgressRefusedOptions) => (await egressRefusedCommand())(seat, opts, ambient));

  const notices = program
    .command("notices")
    .description(
      "the notices not yet seen — every change to what a team may do (a policy applied, a revocation, a stop, an unknown outcome, a refused owner act, a seat halted) — then marks them seen",
    )
    .option("--all", "every notice, seen or not (the seen mark stays where it is)")
    .option("--follow", "keep printing notices as they are recorded (Ctrl-C to stop)")
    .option("--json", "one JSON object per notice (JSON lines)")
    .action(async (opts: { all?: boolean; follow?: boolean; json?: boolean }) => (await noticeCommands()).noticesCommand(opts));
  notices
    .command("hook")
    .description("show, set (-- CMD ARGS...) or clear the command the daemon runs for every notice (argv, no shell; the notice as JSON on stdin)")
    .argument("[command...]", "the hook's argv, after --")
    .option("--clear", "remove the hook")
    .option("--json", "print one JSON object")
    .action(async (command: string[], opts: { clear?: boolean; json?: boolean }) => (await noticeCommands()).noticeHookCommand(command, opts));

  program
    .command("verify")
    .description("check the ledger: the hash chain, every signature and seal, and the signed head; exit 1 naming the first bad seq")
    .option(
      "--archive <FILE>",
      "also an archive teamd ledger archive wrote (repeatable): verify it and the live store as one history, from genesis",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean; archive: string[] }) => (await verify())(opts));

  const lease = program.command("lease").description("leases (§7): the owner's, issued as leads from its envelope; listed with their liveness; revoked");
  lease
    .command("issue")
    .description("issue a root lease from the leads envelope to a seat, as leads, signed by you (decided by the kernel)")
    .argument("<SEAT>", "the recipient, as SEAT@TEAM or SEAT with --team")
    .argument("<CAPABILITY>", "an operational capability in the leads envelope (merge, gate, ...)")
    .argument("<SCOPE>", "'*', or dimension=value pairs: branch=main,path=src/")
    .requiredOption("--ttl <DURATION>", "its lifetime (e.g. 30m, 2h), within the ceiling's lease-ttl")
    .option("--team <TEAM>", "the team")
    .option("--source <ENTRY>", "the envelope entry it is drawn from (default: the first holding the capability)")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seat: string, capability: string, scope: string, opts: { ttl: string; team?: string; source?: string; json?: boolean }) =>
      (await leaseCommands()).leaseIssueCommand(seat, capability, scope, opts, ambient),
    );
  lease
    .command("list")
    .description("the team's leases, each with its liveness walked now")
    .requiredOption("--team <TEAM>", "the team")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { team: string; json?: boolean }) => (await leaseCommands()).leaseListCommand(opts, ambient));
  const revokeOptions = (c: Command) =>
    c
      .argument("<LEASE>", "the lease id (teamd lease list)")
      .requiredOption("--team <TEAM>", "the lease's team")
      .option("--reason <TEXT>", "why, for the record")
      .option("--json", "print one JSON object (for scripts)")
      .action(async (id: string, opts: { team: string; reason?: string; json?: boolean }) => (await leaseCommands()).revokeCommand(id, opts, ambient));
  revokeOptions(
    lease
      .command("revoke")
      .description("revoke a lease and everything below it: in force at once by its flag, even with the ledger down; recorded when the store allows"),
  );
  revokeOptions(
    program
      .command("revoke")
      .description("revoke a lease (same as teamd lease revoke): in force at once by its owner-signed flag, recorded when the store allows"),
  );

  program
    .command("renew")
    .description("renew a team's unattended runtime (the ceiling's runtime, §8): signed by you; a paused team's acts and starts resume, its frozen seats thaw")
    .requiredOption("--team <TEAM>", "the team")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { team: string; json?: boolean }) => (await renew())(opts, ambient));

  const ledger = program.command("ledger").description("owner acts on the ledger itself");
  ledger
    .command("reconcile")
    .description("accept a blocked ledger's observed state (rollback, fork, broken chain), signed by you")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { yes?: boolean; json?: boolean }) => (await ledgerReconcile()).reconcileHead(opts, ambient));
  ledger
    .command("resolve")
    .description("resolve an unknown outcome: accept the intent at SEQ as done, or repeat it under a new request id")
    .argument("<SEQ>", "the intent's record seq (teamd log --type intent)")
    .requiredOption("--team <NAME>", "the team the intent belongs to")
    .option("--done", "the effect happened: accept it as done")
    .option("--repeat <REQUEST_ID>", "the effect did not happen: allow it again under this new request id")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seq: string, opts: { team: string; done?: boolean; repeat?: string; json?: boolean }) =>
      (await ledgerReconcile()).resolveUnknown(seq, opts, ambient),
    );
  ledger
    .command("tombstone")
    .description(
      "hide the content of the record at SEQ behind a tombstone signed by you (§15): its header stays, teamd log shows its stub; refused for a record the gate reads in full",
    )
    .argument("<SEQ>", "the record's seq (teamd log)")
    .option("--reason <TEXT>", "why (recorded, shown in place of the record)")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (seq: string, opts: { reason?: string; yes?: boolean; json?: boolean }) => (await tombstone())(seq, opts, ambient));

  ledger
    .command("archive")
    .description(
      "move the records before a cut out of the live store into a new self-verifying archive file, signed by you (§15); a cut through a record the gate still reads is refused unless --keep keeps it in the live store",
    )
    .option("--before <SEQ|DATE>", "the cut: a record seq, or a time (30d: older than 30 days; or 2026-11-01T00:00:00Z)")
    .option("--to <FILE>", "the archive file (a new file; never replaced)")
    .option("--keep", "keep the records the gate still reads (the policy in force, live leases, unsettled intents…) in the live store past the cut")
    .option("--yes", "do not ask for confirmation")
    .option("--json", "print one JSON object (for scripts)")
    .action(async (opts: { before?: string; to?: string; keep?: boolean; yes?: boolean; json?: boolean }) => (await archive())(opts, ambient));

  const kernel = program.command("kernel").description("the decision kernel, offline");
  kernel
    .command("eval")
    .description("run kernel case files (docs/kernel-cases.md): print each mismatch, exit 1 on any")
    .argument("<FILE...>", "case files (JSON)")
    .option("--json", "print one JSON summary (for scripts)")
    .action(async (files: string[], opts: { json?: boolean }) => {
      process.exitCode = await (await kernelEval())(files, opts);
    });

  return program;
}
