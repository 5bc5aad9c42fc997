/**
 * A seat's own Push call, raw (node's http2, hand-encoded protobuf), run by node in the seat:
 * `node -e "$(echo B64 | base64 -d)" /run/teamd/shim.sock REF OLD NEW [REF OLD NEW ...]` sends one
 * header naming those updates, pack_bytes 0, no pack (not streamed, no file): the push of a tip
 * the hub is to have already. Prints `status N MESSAGE` and the response's printable bytes.
 */
export const RAW_PUSH = String.raw`
const http2 = require("http2"); const net = require("net"); const crypto = require("crypto");
const [sock, ...rest] = process.argv.slice(1);
function varint(n) { const out = []; n = BigInt(n); while (n >= 0x80n) { out.push(Number(n & 0x7fn) | 0x80); n >>= 7n; } out.push(Number(n)); return Buffer.from(out); }
function field(no, buf) { if (typeof buf === "string") buf = Buffer.from(buf); return Buffer.concat([varint((no << 3) | 2), varint(buf.length), buf]); }
const updates = [];
for (let i = 0; i + 2 < rest.length; i += 3) {
  const [ref, oldOid, newOid] = rest.slice(i, i + 3).map((x) => (x === "-" ? "" : x));
  updates.push(field(2, Buffer.concat([field(1, ref), oldOid ? field(2, oldOid) : Buffer.alloc(0), newOid ? field(3, newOid) : Buffer.alloc(0)])));
}
const header = Buffer.concat([field(1, crypto.randomUUID()), ...updates]);
const msg = field(1, header);
const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), msg]); frame.writeUInt32BE(msg.length, 1);
const s = http2.connect("http://seat", { createConnection: () => net.connect(sock) });
const st = s.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/Push", "content-type": "application/grpc", te: "trailers", "teamd-protocol": "3" });
const body = [];
const said = (h) => { if (h["grpc-status"] !== undefined) console.log("status", h["grpc-status"], decodeURIComponent(h["grpc-message"] || "")); };
st.on("response", said); st.on("trailers", said); st.on("data", (d) => body.push(d));
st.on("end", () => { console.log("body", Buffer.concat(body).toString("latin1").replace(/[^\x20-\x7e]/g, ".")); s.close(); });
st.on("error", (e) => { console.log("error", String(e)); s.close(); });
st.end(frame);
setTimeout(() => { console.log("timeout"); process.exit(3); }, 60000).unref();
`;

/** The shell command that runs RAW_PUSH in the seat with `args`. */
export const rawPush = (...args: string[]): string =>
  `node -e "$(echo ${Buffer.from(RAW_PUSH).toString("base64")} | base64 -d)" /run/teamd/shim.sock ${args.join(" ")}`;

/**
 * Rounds of raw pushes sent at once on one connection, run by node in the seat:
 * `node -e ... SOCK ROUNDS OID NAME...` — in round i, one Push call per NAME (with `%` replaced
 * by i), each a new branch at OID with no pack, all started together; the next round after all
 * answered. Prints one line per call: `ROUND NAME STATUS printable-response`.
 */
export const RAW_PUSH_ROUNDS = String.raw`
const http2 = require("http2"); const net = require("net"); const crypto = require("crypto");
const [sock, rounds, oid, ...names] = process.argv.slice(1);
function varint(n) { const out = []; n = BigInt(n); while (n >= 0x80n) { out.push(Number(n & 0x7fn) | 0x80); n >>= 7n; } out.push(Number(n)); return Buffer.from(out); }
function field(no, buf) { if (typeof buf === "string") buf = Buffer.from(buf); return Buffer.concat([varint((no << 3) | 2), varint(buf.length), buf]); }
const s = http2.connect("http://seat", { createConnection: () => net.connect(sock) });
function push(ref) {
  const header = Buffer.concat([field(1, crypto.randomUUID()), field(2, Buffer.concat([field(1, ref), field(3, oid)]))]);
  const msg = field(1, header);
  const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), msg]); frame.writeUInt32BE(msg.length, 1);
  return new Promise((resolve) => {
    const st = s.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/Push", "content-type": "application/grpc", te: "trailers", "teamd-protocol": "3" });
    const body = []; let status = "?";
    const said = (h) => { if (h["grpc-status"] !== undefined) status = h["grpc-status"] + " " + decodeURIComponent(h["grpc-message"] || ""); };
    st.on("response", said); st.on("trailers", said); st.on("data", (d) => body.push(d));
    st.on("close", () => resolve(status + " " + Buffer.concat(body).toString("latin1").replace(/[^\x20-\x7e]/g, ".")));
    st.on("error", () => undefined);
    st.end(frame);
  });
}
(async () => {
  for (let i = 0; i < Number(rounds); i++) {
    const refs = names.map((n) => n.replace(/%/g, String(i)));
    const answers = await Promise.all(refs.map(push));
    answers.forEach((a, j) => console.log(i, refs[j], a));
  }
  s.close();
})();
setTimeout(() => { console.log("timeout"); process.exit(3); }, 240000).unref();
`;

export const rawPushRounds = (rounds: number, oid: string, ...names: string[]): string =>
  `node -e "$(echo ${Buffer.from(RAW_PUSH_ROUNDS).toString("base64")} | base64 -d)" /run/teamd/shim.sock ${rounds} ${oid} ${names.join(" ")}`;
