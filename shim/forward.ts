import { connect } from "node:net";

/**
 * `teamd forward`, inside the seat (src/effects/forward-hub.ts is the other side): the launcher
 * is in the seat's network namespace, where the daemon cannot open a connection, so it keeps
 * one standing connection to the daemon over the egress socket (`FORWARD-CONTROL`) and, for
 * each `OPEN <id> <port>` the daemon writes, connects to 127.0.0.1:<port> here and dials back
 * with `FORWARD-DATA <id>` and the bytes both ways — or `FORWARD-FAIL <id> <code>`. Unref'd:
 * it never keeps the launcher alive after the seat's command ends.
 */
const MAX_LINE = 256;

export function forwardControl(egressSocket: string): void {
  const control = connect(egressSocket);
  control.on("error", () => undefined);
  control.unref();
  control.write("FORWARD-CONTROL\n");
  control.setEncoding("latin1");
  let buffered = "";
  control.on("data", (text: string) => {
    buffered += text;
    for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const open = /^OPEN ([0-9a-f-]{1,64}) ([0-9]{1,5})$/.exec(line);
      if (open !== null) openOne(egressSocket, open[1] as string, Number(open[2]));
    }
    if (buffered.length > MAX_LINE) control.destroy();
  });
}

function openOne(egressSocket: string, id: string, port: number): void {
  // Half-open both ways: one side's end is passed on, and the other's answer still comes back.
  const local = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  let connected = false;
  local.once("error", (error: NodeJS.ErrnoException) => {
    if (!connected) {
      const back = connect(egressSocket);
      back.on("error", () => undefined);
      back.end(`FORWARD-FAIL ${id} ${/^[A-Z0-9_]{1,32}$/.test(error.code ?? "") ? error.code : "ERROR"}\n`);
    }
  });
  local.once("connect", () => {
    connected = true;
    const back = connect({ path: egressSocket, allowHalfOpen: true });
    back.on("error", () => local.destroy());
    local.on("error", () => back.destroy());
    back.write(`FORWARD-DATA ${id}\n`);
    local.pipe(back);
    back.pipe(local);
    local.once("close", () => back.destroy());
    back.once("close", () => local.destroy());
    const both = () => {
      if (local.writableEnded && back.writableEnded) {
        local.destroySoon();
        back.destroySoon();
      }
    };
    local.on("end", both);
    back.on("end", both);
  });
}
