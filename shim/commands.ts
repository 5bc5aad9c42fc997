import { readFileSync } from "node:fs";
import { ShimService } from "../src/gen/teamd/v1/shim_pb.js";
import { SEAT_CHUNK_BYTES } from "../src/rpc/channel-options.js";
import { createRpcClient } from "../src/rpc/client.js";
import { leaseJson, leaseLine } from "../src/rpc/lease-view.js";
import { randomUUID } from "./request-id.js";
import { socketPath, usage } from "./seat-socket.js";

/**
 * The acts of `teamd-shim`'s commands (cli.ts is their command tree): each asks the daemon over
 * the seat's socket and prints its answer. Loaded only when a command runs, so `teamd-shim
 * --version` and `--help` load no gRPC and no generated code (issue 26). `whoami` is whoami.ts's.
 */

function client(deadlineMs = 30_000) {
  return createRpcClient(ShimService, socketPath(), { deadlineMs });
}

async function withClient<T>(use: (c: ReturnType<typeof client>) => Promise<T>, deadlineMs?: number): Promise<T> {
  const c = client(deadlineMs);
  try {
    return await use(c);
  } finally {
    c.close();
  }
}

const print = (json: boolean | undefined, value: unknown, text: string) => process.stdout.write(json ? `${JSON.stringify(value)}\n` : text);

export async function fileStat(path: string, opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.fileStat({ path }));
  const value = { path, exists: r.exists, kind: r.kind || null, size: Number(r.size), oid: r.oid || null };
  print(opts.json, value, r.exists ? `${path}: ${r.kind}, ${r.size} bytes, ${r.oid}\n` : `${path}: does not exist on the trunk\n`);
}

/** The content arrives in chunks (protocol 3); it is printed only once whole, as when it came in one message. */
export async function fileRead(path: string): Promise<void> {
  const content = await withClient(async (c) => {
    const chunks: Uint8Array[] = [];
    let size: bigint | undefined;
    let bytes = 0n;
    for await (const part of c.fileRead({ path })) {
      size ??= part.size;
      bytes += BigInt(part.content.byteLength);
      if (bytes > size) throw new Error(`the daemon sent more than the ${size} bytes it declared for ${path}`);
      chunks.push(part.content);
    }
    if (size === undefined || bytes !== size) throw new Error(`the daemon's answer for ${path} ended after ${bytes} of ${size ?? "?"} bytes`);
    return Buffer.concat(chunks);
  });
  process.stdout.write(content);
}

/** A header, then the content in chunks under the seat socket's receive cap (protocol 3). */
export async function fileWrite(path: string, opts: { from?: string; branch?: string; message?: string; json?: boolean }): Promise<void> {
  const content = opts.from ? readFileSync(opts.from) : await readStdin();
  async function* parts() {
    yield {
      part: {
        case: "header" as const,
        value: { requestId: randomUUID(), path, branch: opts.branch ?? "", message: opts.message ?? "", size: BigInt(content.byteLength) },
      },
    };
    for (let at = 0; at < content.byteLength; at += SEAT_CHUNK_BYTES)
      yield { part: { case: "data" as const, value: content.subarray(at, at + SEAT_CHUNK_BYTES) } };
  }
  const r = await withClient((c) => c.fileWrite(parts()));
  print(opts.json, { path, hubRef: r.hubRef, commit: r.commit }, `${path} written: ${r.hubRef} is now ${r.commit}\n`);
}

export async function checkpoint(note: string, opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.checkpoint({ requestId: randomUUID(), note }));
  print(opts.json, { intentSeq: Number(r.intentSeq), outcomeSeq: Number(r.outcomeSeq) }, `checkpoint recorded (records ${r.intentSeq} and ${r.outcomeSeq})\n`);
}

/** "90s", "30m", "2h", "1d" or plain milliseconds: syntax only (the daemon decides the ceiling). */
function ttlMs(text: string): bigint {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) usage(`--ttl '${text}' is not a duration (e.g. 90s, 30m, 2h, 1d)`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? "ms") as "ms"];
  return BigInt(m[1] as string) * BigInt(unit);
}

export async function leaseIssue(
  recipient: string,
  capability: string,
  scope: string,
  opts: { ttl: string; parent?: string; source?: string; json?: boolean },
): Promise<void> {
  const ttl = ttlMs(opts.ttl);
  const r = await withClient((c) =>
    c.leaseIssue({ requestId: randomUUID(), recipient, capability, scope, ttlMs: ttl, parent: opts.parent ?? "", source: opts.source ?? "" }),
  );
  if (r.proposalId !== "") {
    print(
      opts.json,
      { pending: true, proposal: r.proposalId },
      `${capability} is behind two-granter (§10): no lease yet — proposal ${r.proposalId} waits for a second granter (teamd-shim confirm ${r.proposalId})\n`,
    );
    return;
  }
  const value = r.lease ? leaseJson(r.lease) : null;
  print(opts.json, { ...value, seq: Number(r.seq) }, `lease issued (record ${r.seq}): ${value ? leaseLine(value) : ""}\n`);
}

type Done = { seq: bigint; kind: string; proposalId: string; description: string; revoked: string[]; lease?: Parameters<typeof leaseJson>[0] };

function printDone(json: boolean | undefined, r: Done): void {
  if (r.proposalId !== "") {
    print(
      json,
      { pending: true, proposal: r.proposalId, change: r.description },
      `${r.description}: behind two-granter (§10), not in force yet — proposal ${r.proposalId} waits for a second granter (teamd-shim confirm ${r.proposalId})\n`,
    );
    return;
  }
  const lease = r.lease ? leaseJson(r.lease) : undefined;
  print(
    json,
    { seq: Number(r.seq), kind: r.kind, change: r.description, revoked: r.revoked, ...(lease !== undefined ? { lease } : {}) },
    `${r.kind === "agreement" ? "agreed" : r.kind === "lease" ? "lease issued" : "done"} (record ${r.seq}): ${lease !== undefined ? leaseLine(lease) : r.description}` +
      `${r.revoked.length > 0 ? `; revoked with it: ${r.revoked.join(", ")}` : ""}\n`,
  );
}

export async function grant(seat: string, capability: string, scope: string, opts: { name?: string; json?: boolean }): Promise<void> {
  const r = await withClient((c) =>
    c.administer({ requestId: randomUUID(), change: { case: "grant", value: { seat, capability, scope, name: opts.name ?? "" } } }),
  );
  printDone(opts.json, r);
}

export async function ungrant(seat: string, capability: string, opts: { name?: string; json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.administer({ requestId: randomUUID(), change: { case: "ungrant", value: { seat, capability, name: opts.name ?? "" } } }));
  printDone(opts.json, r);
}

export async function seatAdd(seat: string, opts: { like: string; role?: string[]; json?: boolean }): Promise<void> {
  const r = await withClient((c) =>
    c.administer({ requestId: randomUUID(), change: { case: "seatAdd", value: { seat, like: opts.like, roles: opts.role ?? [] } } }),
  );
  printDone(opts.json, r);
}

export async function seatRemove(seat: string, opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.administer({ requestId: randomUUID(), change: { case: "seatRemove", value: { seat } } }));
  printDone(opts.json, r);
}

export async function teamNotices(opts: { after?: string; json?: boolean }): Promise<void> {
  const after = /^\d+$/.test(opts.after ?? "0") ? BigInt(opts.after ?? "0") : usage(`--after '${opts.after ?? ""}' is not a record number`);
  const r = await withClient((c) => c.teamNotices({ afterSeq: after }));
  const list = r.notices.map((n) => ({ seq: Number(n.seq), time: new Date(Number(n.timeUnixMs)).toISOString(), subject: n.subject }));
  print(
    opts.json,
    { notices: list, next: Number(r.nextAfterSeq) },
    `${list.map((n) => `${n.seq}  ${n.time}  ${n.subject}`).join("\n")}${list.length > 0 ? "\n" : ""}(next: --after ${r.nextAfterSeq})\n`,
  );
}

/** A child team file is read at most this long here too (the daemon refuses longer). */
const MAX_CHILD_FILE_BYTES = 256 * 1024;

export async function createTeam(file: string, opts: { root: string; json?: boolean }): Promise<void> {
  const text = readFileSync(file);
  if (text.byteLength > MAX_CHILD_FILE_BYTES) usage(`${file} is longer than ${MAX_CHILD_FILE_BYTES / 1024} KiB; a team file is not`);
  const r = await withClient((c) => c.createTeam({ requestId: randomUUID(), root: opts.root, teamFile: text }));
  const deadline = r.deadlineUnixMs > 0n ? new Date(Number(r.deadlineUnixMs)).toISOString() : null;
  print(
    opts.json,
    { created: true, team: r.team, teamSeq: Number(r.teamSeq), policySeq: Number(r.policySeq), started: r.started, deadline },
    `team '${r.team}' created at ${opts.root} (records ${r.teamSeq}, ${r.policySeq}); ${r.started.length > 0 ? `started: ${r.started.join(", ")}` : "not started"}${deadline !== null ? `; its runtime ends ${deadline}` : ""}\n`,
  );
}

export async function startTeam(seat: string | undefined, opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.startTeam({ seat: seat ?? "" }));
  print(opts.json, { started: r.started }, `started: ${r.started.join(", ") || "none (every seat with a start runs)"}\n`);
}

export async function stopTeam(opts: { reason?: string; json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.stopTeam({ reason: opts.reason ?? "" }));
  print(
    opts.json,
    { stopped: true, seq: Number(r.seq), seats: r.seats },
    `team stopped (record ${r.seq}): its seats stop now (${r.seats.join(", ") || "none running"}), this one too; only the owner's teamd resume lifts it\n`,
  );
}

export async function proposals(opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.proposals({}));
  const list = r.proposals.map((p) => ({
    proposal: p.proposalId,
    asker: p.asker,
    kind: p.kind,
    change: p.description,
    created: new Date(Number(p.createdUnixMs)).toISOString(),
    inputState: p.inputState,
  }));
  print(
    opts.json,
    { proposals: list },
    list.length === 0
      ? "no proposal waits for you (only a grant holder that is not leads confirms one)\n"
      : `${list.map((p) => `${p.proposal}  from ${p.asker}: ${p.change}  (${p.created})`).join("\n")}\n`,
  );
}

export async function confirm(proposal: string, opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.confirm({ requestId: randomUUID(), proposalId: proposal }));
  if (r.done === undefined) throw new Error("the daemon answered no outcome");
  printDone(opts.json, r.done as unknown as Done);
}

export async function leaseRevoke(leaseId: string, opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.leaseRevoke({ requestId: randomUUID(), leaseId }));
  print(opts.json, { revoked: r.revoked }, `revoked: ${r.revoked.join(", ")}\n`);
}

export async function leaseList(opts: { json?: boolean }): Promise<void> {
  const r = await withClient((c) => c.leaseList({}));
  const leases = r.leases.map(leaseJson);
  print(opts.json, { leases }, leases.length === 0 ? "you hold no live lease\n" : `${leases.map(leaseLine).join("\n")}\n`);
}

interface TrunkReply {
  readonly act?: { effectId: string; intentSeq: bigint; outcomeSeq: bigint; base: string; head: string; tree: string; commit: string };
}

function printTrunk(what: string, reply: TrunkReply, json: boolean | undefined): void {
  const act = reply.act;
  const value = act && {
    effectId: act.effectId,
    intentSeq: Number(act.intentSeq),
    outcomeSeq: Number(act.outcomeSeq),
    base: act.base,
    head: act.head,
    tree: act.tree,
    commit: act.commit || null,
  };
  print(
    json,
    value,
    `${what} recorded (effect ${act?.effectId.slice(0, 16)}…, records ${act?.intentSeq} and ${act?.outcomeSeq})${act?.commit ? `; trunk is now ${act.commit}` : ""}\n`,
  );
}

export async function review(branch: string, opts: { approve?: boolean; reject?: boolean; into?: string; json?: boolean }): Promise<void> {
  if (Boolean(opts.approve) === Boolean(opts.reject)) usage("give exactly one of --approve or --reject");
  const reply = await withClient((c) => c.review({ requestId: randomUUID(), branch, into: opts.into ?? "", approve: Boolean(opts.approve) }));
  printTrunk(opts.approve ? "approval" : "rejection", reply, opts.json);
}

export async function gate(branch: string, opts: { pass?: boolean; fail?: boolean; into?: string; json?: boolean }): Promise<void> {
  if (Boolean(opts.pass) === Boolean(opts.fail)) usage("give exactly one of --pass or --fail");
  const reply = await withClient((c) => c.gate({ requestId: randomUUID(), branch, into: opts.into ?? "", pass: Boolean(opts.pass) }));
  printTrunk(opts.pass ? "gate pass" : "gate refusal", reply, opts.json);
}

export async function merge(branch: string, opts: { into?: string; json?: boolean }): Promise<void> {
  const reply = await withClient((c) => c.merge({ requestId: randomUUID(), branch, into: opts.into ?? "" }));
  printTrunk("merge", reply, opts.json);
}

export async function deploy(env: string, opts: { artifact?: string; as?: string; json?: boolean }): Promise<void> {
  // The daemon gives the command 15 minutes; the call waits a little longer for its outcome.
  const reply = await withClient((c) => c.deploy({ requestId: randomUUID(), env, artifact: opts.artifact ?? "", asAccount: opts.as ?? "" }), 16 * 60_000);
  const act = reply.act;
  if (opts.json) {
    const pushed = reply.pushedTo !== "" ? { pushedTo: reply.pushedTo, account: reply.account } : {};
    print(
      true,
      {
        env: reply.env,
        artifact: act?.commit ?? "",
        effectId: act?.effectId ?? "",
        intentSeq: Number(act?.intentSeq ?? 0),
        outcomeSeq: Number(act?.outcomeSeq ?? 0),
        tree: act?.tree ?? "",
        exitCode: reply.exitCode,
        outputTail: reply.outputTail,
        ...pushed,
      },
      "",
    );
    return;
  }
  if (reply.outputTail !== "") process.stdout.write(reply.outputTail.endsWith("\n") ? reply.outputTail : `${reply.outputTail}\n`);
  const where = reply.pushedTo !== "" ? ` (pushed to ${reply.pushedTo} as ${reply.account})` : "";
  process.stdout.write(
    `deployed ${act?.commit} to ${reply.env}${where} (effect ${act?.effectId.slice(0, 16)}…, records ${act?.intentSeq} and ${act?.outcomeSeq})\n`,
  );
}

interface BrokerTaskReply {
  id: string;
  title: string;
  state: string;
  labels: string[];
  assignee: string;
  url: string;
  claimed: boolean;
  body: string;
}

const taskValue = (t: BrokerTaskReply, withBody: boolean) => ({
  id: t.id,
  title: t.title,
  state: t.state,
  labels: t.labels,
  assignee: t.assignee || null,
  url: t.url || null,
  claimed: t.claimed,
  ...(withBody ? { body: t.body } : {}),
});

const showTask = (t: ReturnType<typeof taskValue>) =>
  `${t.id}  [${t.state}${t.claimed ? ", claimed" : ""}]  ${t.title}${t.labels.length > 0 ? `  (${t.labels.join(", ")})` : ""}${t.assignee ? `  @${t.assignee}` : ""}`;

/** The broker (§11): the daemon calls the tracker with the owner's credential; the seat sees only scrubbed, allowlisted fields. */
export async function broker(
  operation: "pull" | "read" | "claim" | "comment",
  task: string,
  id: string | undefined,
  opts: { json?: boolean; as?: string; body?: string },
): Promise<void> {
  const r = await withClient(
    (c) => c.broker({ requestId: randomUUID(), operation, task, id: id ?? "", asAccount: opts.as ?? "", body: opts.body ?? "" }),
    60_000,
  );
  const records = { tracker: r.tracker, intentSeq: Number(r.intentSeq), outcomeSeq: Number(r.outcomeSeq) };
  if (operation === "pull") {
    const tasks = r.tasks.map((t) => taskValue(t, false));
    print(opts.json, { task, tasks, ...records }, tasks.length === 0 ? `no open task in ${task}\n` : `${tasks.map(showTask).join("\n")}\n`);
    return;
  }
  const one = r.tasks[0];
  const value = one ? taskValue(one, operation === "read") : null;
  if (operation === "comment") {
    print(
      opts.json,
      { task, commented: value, account: opts.as ?? "", ...records },
      `commented on ${task} ${value?.id} as ${opts.as ?? ""} (records ${r.intentSeq} and ${r.outcomeSeq})\n`,
    );
    return;
  }
  if (operation === "claim") {
    print(
      opts.json,
      { task, claimed: value, ...records },
      `claimed ${task} ${value?.id} (records ${r.intentSeq} and ${r.outcomeSeq})\n${value ? showTask(value) : ""}\n`,
    );
    return;
  }
  const text = value ? `${showTask(value)}${value.url ? `\n${value.url}` : ""}\n\n${value.body ?? ""}${(value.body ?? "").endsWith("\n") ? "" : "\n"}` : "";
  print(opts.json, { task, read: value, ...records }, text);
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
