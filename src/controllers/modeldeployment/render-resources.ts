// A role's container resources, derived from its InstanceType: limits are its unitResources × the cards
// (at least one unit), and the cards on an accelerated type.
import type { ResourceRequirements } from 'kubernetes-types/core/v1.js';
import type { ModelDeploymentRole } from '../../api/model-deployment.ts';
import type { InstanceType } from '../../api/types.ts';

const deviceResources: Record<string, string> = {
  nvidia: 'nvidia.com/gpu',
  amd: 'amd.com/gpu',
  ascend: 'huawei.com/npu',
  huawei: 'huawei.com/npu',
  hygon: 'hygon.com/dcu',
};

const decimalQuantity = /^(\d+)(?:\.(\d+))?(.*)$/;

/** `q` × `n`, exact, keeping the suffix: 2Gi × 3 = 6Gi, 500m × 2 = 1000m, 1.5 × 2 = 3. */
export function scaleQuantity(q: string | number, n: number): string {
  const match = decimalQuantity.exec(String(q).trim());
  if (!match)
    throw new Error(`"${q}" is not a quantity this operator can multiply; write it like 8, 500m or 32Gi`);
  const [, whole = '', fraction = '', suffix = ''] = match;
  const digits = BigInt(`${whole}${fraction}`) * BigInt(n);
  const text = digits.toString().padStart(fraction.length + 1, '0');
  const cut = text.length - fraction.length;
  const decimals = text.slice(cut).replace(/0+$/, '');
  return `${text.slice(0, cut)}${decimals ? `.${decimals}` : ''}${suffix}`;
}

/** The extended resource an InstanceType's cards are requested by. */
export function acceleratorResourceName(type: InstanceType): string {
  const manufacturer = type.spec.manufacturer || 'nvidia';
  const name = deviceResources[manufacturer.toLowerCase()];
  if (!name)
    throw new Error(
      `InstanceType ${type.metadata.name} has manufacturer ${manufacturer}, whose device resource this operator does not know (known: nvidia, amd, ascend, hygon)`,
    );
  return name;
}

/** Cards per Pod: resources.accelerator, else 1 on an acceleratable type and 0 on a CPU-only one. */
export function acceleratorCount(role: ModelDeploymentRole, type: InstanceType): number {
  const declared = role.resources?.accelerator;
  if (declared === undefined) return type.spec.acceleratable ? 1 : 0;
  const count = Number(declared);
  if (!Number.isInteger(count) || count < 0)
    throw new Error(
      `role ${role.name}: resources.accelerator ${declared} is not a whole number of cards; write it like "1"`,
    );
  return count;
}

/** Limits of unit CPU/RAM × cards (at least one unit) plus the cards; requests small under overcommit. */
export function roleResources(
  role: ModelDeploymentRole,
  type: InstanceType,
  overcommit: boolean,
): ResourceRequirements {
  const cards = acceleratorCount(role, type);
  const units = Math.max(cards, 1);
  // A CPU-only type has no device to ask for, whatever count the role names.
  const device =
    type.spec.acceleratable && cards > 0 ? { [acceleratorResourceName(type)]: String(cards) } : {};
  const limits = {
    cpu: scaleQuantity(type.spec.unitResources.cpu, units),
    memory: scaleQuantity(type.spec.unitResources.ram, units),
    ...device,
  };
  const requests = overcommit ? { cpu: `${100 * units}m`, memory: `${128 * units}Mi` } : { ...limits };
  return { limits, requests };
}
