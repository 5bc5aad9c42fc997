import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";

/** A ShimService implementation from the methods a test uses; every other one fails if called. */
export function withUnused(impl: Record<string, unknown>): Record<string, unknown> {
  const full: Record<string, unknown> = {};
  for (const method of ShimService.methods) {
    full[method.localName] = impl[method.localName] ?? (() => Promise.reject(new Error(`${method.name} is not used by this test`)));
  }
  return full;
}
