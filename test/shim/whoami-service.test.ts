import { describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { WhoAmIService, whoAmICalls } from "../../shim/whoami-service.js";

/**
 * `teamd-shim whoami` calls the daemon through a service object of its one method
 * (shim/whoami-service.ts), so that it builds none of shim.proto's other descriptors. It must be
 * that method exactly as the generated ShimService has it: its path, kind and messages.
 */
describe("teamd-shim whoami: its service", () => {
  it("is ShimService's WhoAmI: the same service name, method, kind and messages", () => {
    const generated = ShimService.method.whoAmI;
    expect(WhoAmIService.typeName).toBe(ShimService.typeName);
    expect(WhoAmIService.methods).toHaveLength(1);
    const [method] = WhoAmIService.methods;
    expect({ name: method?.name, localName: method?.localName, methodKind: method?.methodKind }).toEqual({
      name: generated.name,
      localName: generated.localName,
      methodKind: generated.methodKind,
    });
    // The very message descriptors the generated service names (shim.proto imports whoami.proto).
    expect(method?.input).toBe(generated.input);
    expect(method?.output).toBe(generated.output);
  });

  it("writes its call on the path the daemon serves it at", () => {
    expect(whoAmICalls().map((call) => call.path)).toEqual([`/${ShimService.typeName}/${ShimService.method.whoAmI.name}`]);
  });
});
