import { describe, expect, it } from "vitest";
import { addressAllowed, classifyAddress } from "../../src/effects/egress-address.js";
import { hostsMapResolver } from "../../src/effects/egress-resolve.js";

/** Where a resolved address lies (§12): only public addresses, unless a range is declared. */
describe("egress address classification", () => {
  it.each([
    ["93.184.216.34", "public"],
    ["2606:4700::1111", "public"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["10.2.3.4", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["fd12:3456::1", "private"],
    ["::ffff:10.0.0.1", "private"],
    ["169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["not-an-address", "reserved"],
  ])("%s is %s", (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });
  it("classes the host's own addresses as host", () => {
    expect(classifyAddress("203.0.113.9", ["203.0.113.9"])).toBe("host");
    expect(classifyAddress("203.0.113.10", ["203.0.113.9"])).toBe("public");
  });
  it("allows a non-public address only inside a declared range", () => {
    expect(addressAllowed("127.0.0.1", [], []).ok).toBe(false);
    expect(addressAllowed("127.0.0.1", ["127.0.0.1/32"], [])).toEqual({ ok: true, class: "loopback", range: "127.0.0.1/32" });
    expect(addressAllowed("127.0.0.2", ["127.0.0.1/32"], []).ok).toBe(false);
    expect(addressAllowed("10.9.8.7", ["10.0.0.0/8"], []).ok).toBe(true);
    expect(addressAllowed("::ffff:10.9.8.7", ["10.0.0.0/8"], []).ok).toBe(true);
    expect(addressAllowed("203.0.113.9", [], ["203.0.113.9"])).toEqual({ ok: false, class: "host" });
    expect(addressAllowed("93.184.216.34", [], []).ok).toBe(true);
  });
  it("resolves through a hosts map only, when tests give one (a name not in it does not resolve)", async () => {
    const resolve = hostsMapResolver(new Map([["allowed.test", ["127.0.0.1"]]]));
    await expect(resolve("ALLOWED.test")).resolves.toEqual(["127.0.0.1"]);
    await expect(resolve("example.com")).rejects.toMatchObject({ code: "ENOTFOUND" });
  });
});
