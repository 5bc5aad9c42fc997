import type { DescMethod } from "@bufbuild/protobuf";
import { RefusalError, type AnyService, type ServiceImpl } from "./index.js";
import type { RuleId } from "../kernel/rules.js";

/**
 * An implementation of every method of a service that refuses with one rule. Each socket
 * serves both services so that a call on the wrong socket gets a named refusal instead of
 * a bare UNIMPLEMENTED: the owner's service on a seat socket, a seat's on the control one.
 */
export function refuseAll<S extends AnyService>(
  service: S,
  rule: RuleId,
  reason: (method: string) => string,
  /** Recorded before the refusal is answered (a refusal the store can take is on record, §15). */
  record?: (method: string, refusal: RefusalError) => Promise<void>,
): ServiceImpl<S> {
  const impl: Record<string, unknown> = {};
  for (const method of service.methods as readonly DescMethod[]) {
    const refused = async (): Promise<never> => {
      const refusal = new RefusalError(rule, reason(`${service.typeName}.${method.name}`));
      await record?.(method.name, refusal).catch(() => undefined);
      throw refusal;
    };
    impl[method.localName] =
      method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming"
        ? async function* () {
            await refused();
          }
        : () => refused();
  }
  return impl as ServiceImpl<S>;
}
