// `resourceFieldRef` values (limits.cpu, requests.memory…) for env and the downward API: the
// container's limit, or the node's allocatable amount when no limit is set, divided by the divisor
// and rounded up, as the kubelet reports them.
import { ceilDiv, parseQuantity } from '../../controllers/backend/quantity.ts';
import { ContainerConfigError } from './errors.ts';
import type { Container, Pod, ResourceFieldSelector } from './pod-types.ts';

/** A quantity as an exact fraction; a malformed one is the container's configuration error. */
function quantity(q: string | number): { num: bigint; den: bigint } {
  try {
    return parseQuantity(q);
  } catch (err) {
    throw new ContainerConfigError((err as Error).message);
  }
}

export function resourceFieldValue(
  pod: Pod,
  container: Container,
  ref: ResourceFieldSelector,
  allocatable: Record<string, string>,
): string {
  const target = ref.containerName
    ? [...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])].find(
        (c) => c.name === ref.containerName,
      )
    : container;
  const [kind, resource] = ref.resource.split('.', 2) as [string, string];
  const set = kind === 'limits' ? target?.resources?.limits : target?.resources?.requests;
  const raw = set?.[resource] ?? (kind === 'limits' ? allocatable[resource] : undefined) ?? '0';
  const value = quantity(raw);
  const divisor = quantity(ref.divisor ?? 1);
  if (divisor.num <= 0n)
    throw new ContainerConfigError(`divisor "${ref.divisor}" of ${ref.resource} must be positive`);
  return String(ceilDiv(value.num * divisor.den, value.den * divisor.num));
}
