import { describe, expect, it } from "vitest";
import { judgeSeccomp, SECCOMP_FAMILIES, SECCOMP_FILTERED } from "../../src/selftest/corpus.js";

/**
 * The seccomp probe's judgement (src/selftest/corpus.ts), as a table: the filter's answer in every
 * probe holds; a probe the host itself refuses before the kernel's syscall entry (the i386 ABI on a
 * host that faults `int 0x80`: SIGSEGV with the filter and without) holds but proves nothing; every
 * other difference is broken.
 */
const filtered = { ...SECCOMP_FILTERED, status_seccomp: "2", pid1_seccomp: "2", fork: "ok", thread: "ok", personality_query: "ok" };
// The kernel's own answers without the filter: something else than the filter's, in every probe.
const kernel = {
  ...Object.fromEntries(Object.keys(SECCOMP_FILTERED).map((name) => [name, "ok"])),
  status_seccomp: "0",
  pid1_seccomp: "0",
  fork: "ok",
  thread: "ok",
  personality_query: "ok",
};
const judge = (inside: Record<string, string>, control: Record<string, string>) => judgeSeccomp(JSON.stringify(inside), JSON.stringify(control));

describe("judgeSeccomp", () => {
  it("the filter's answer everywhere, the kernel's otherwise: held, every family proven", () => {
    expect(judge(filtered, kernel)).toMatchObject({ held: true, controlOk: true });
  });

  const cases: Array<[string, Record<string, string>, Record<string, string>, { held: boolean; controlOk: boolean; detail: RegExp }]> = [
    [
      "i386 faulted by the host with the filter and without: held, said, the abi family proven by x32",
      { ...filtered, i386_getpid: "killed:11" },
      { ...kernel, i386_getpid: "killed:11" },
      { held: true, controlOk: true, detail: /i386_getpid \(killed:11\) is refused by this host/ },
    ],
    [
      "the filter withheld (the kernel's answers inside): broken, and the control still tells every family apart",
      kernel,
      kernel,
      { held: false, controlOk: true, detail: /the filter is not loaded/ },
    ],
    [
      "i386 faulted inside but made without the filter: broken",
      { ...filtered, i386_getpid: "killed:11" },
      { ...kernel, i386_getpid: "ok" },
      { held: false, controlOk: true, detail: /i386_getpid: killed:11 \(filter: killed:31\)/ },
    ],
    [
      "i386 made inside the seat: broken, whatever the control",
      { ...filtered, i386_getpid: "ok" },
      { ...kernel, i386_getpid: "killed:11" },
      { held: false, controlOk: true, detail: /i386_getpid: ok/ },
    ],
    [
      "the host refusing i386 and x32 alike proves nothing of the abi family",
      { ...filtered, i386_getpid: "killed:11" },
      { ...kernel, i386_getpid: "killed:11", x32_getpid: SECCOMP_FILTERED.x32_getpid as string },
      { held: true, controlOk: false, detail: /no probe tells the filter from this kernel for abi/ },
    ],
    [
      "another probe's segfault is no host refusal: broken",
      { ...filtered, io_uring_setup: "killed:11" },
      { ...kernel, io_uring_setup: "killed:11" },
      { held: false, controlOk: true, detail: /io_uring_setup: killed:11/ },
    ],
  ];
  it.each(cases)("%s", (_what, inside, control, want) => {
    const got = judge(inside, control);
    expect({ held: got.held, controlOk: got.controlOk }).toEqual({ held: want.held, controlOk: want.controlOk });
    expect(got.detail).toMatch(want.detail);
  });

  it("every family has a probe the table knows", () => {
    for (const names of Object.values(SECCOMP_FAMILIES)) for (const name of names) expect(SECCOMP_FILTERED[name], name).toBeDefined();
  });
});
