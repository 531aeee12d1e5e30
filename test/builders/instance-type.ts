// InstanceTypes: a Linux amd64 type of 1 CPU and 2Gi by default, the accelerator fields a test needs
// by argument.
import type { InstanceTypeSpec } from '../../src/api/instance-type.ts';
import type { InstanceType } from '../../src/api/types.ts';
import { v1 } from './api.ts';

export function instanceType(name: string, spec: Partial<InstanceTypeSpec> = {}): InstanceType {
  return {
    apiVersion: v1,
    kind: 'InstanceType',
    metadata: { name },
    spec: {
      os: 'linux',
      arch: 'amd64',
      unitResources: { cpu: '1', ram: '2Gi' },
      localStorage: '10Gi',
      ...spec,
    },
  };
}

/** An NVIDIA A10G type of 8 CPUs and 32Gi a unit, the one the ModelDeployment tests run on. */
export const a10g = instanceType('nvidia-a10g', {
  acceleratable: true,
  acceleratorGroup: 'nvidia-a10g',
  manufacturer: 'nvidia',
  unitResources: { cpu: '8', ram: '32Gi' },
  localStorage: '100Gi',
});
