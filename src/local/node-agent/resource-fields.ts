// `resourceFieldRef` values (limits.cpu, requests.memory…) for env and the downward API: the
// container's limit, or the node's allocatable amount when no limit is set, divided by the divisor
// and rounded up, as the kubelet reports them.
import { ContainerConfigError } from './errors.ts';
import type { Container, Pod, ResourceFieldSelector } from './pod-types.ts';

const suffixes: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A quantity as a (possibly fractional) number; precise enough for environment values. */
export function quantityValue(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = /^([+-]?\d*\.?\d+)([a-zA-Z]*)$/.exec(q.trim());
  const scale = m ? suffixes[m[2]!] : undefined;
  if (!m || scale === undefined) throw new ContainerConfigError(`"${q}" is not a quantity`);
  return Number(m[1]) * scale;
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
  const divisor = quantityValue(ref.divisor ?? 1) || 1;
  return String(Math.ceil(quantityValue(raw) / divisor));
}
