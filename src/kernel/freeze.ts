/**
 * Deep freeze: the kernel's inputs and outputs are immutable values, so a policy handed to
 * `authorize` cannot be edited between the check and the use (R: accept once). Policy data
 * is a tree (no cycles), so plain recursion terminates.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}
