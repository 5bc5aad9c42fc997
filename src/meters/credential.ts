import { inspect } from "node:util";

/**
 * A provider's admin key, held so that it cannot be printed by accident: a configuration that is
 * logged, inspected, stringified or serialized shows `[meter key]`, never the key. Only the
 * adapter that sends it reads it (`reveal()`), into the one request header the provider expects.
 */
export class MeterCredential {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The key itself: for the request header and for the daemon's scrub list, nowhere else. */
  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return "[meter key]";
  }

  toJSON(): string {
    return "[meter key]";
  }

  [inspect.custom](): string {
    return "[meter key]";
  }
}
