// InstanceType: its shape and immutability rules refuse a bad create or edit through the real apiserver,
// naming the field and the fix.
import { describeRefusals, instanceType, named, refusalCases } from '../support/schema-refusals.ts';

const { cases, create, update } = refusalCases();

// InstanceType.
create(
  'acceleratable without a group',
  named((n) => instanceType(n, { acceleratable: true }), 'itacc'),
  'spec',
  'spec.acceleratorGroup is required',
);
create(
  'CPU-only with unit CPU 2',
  named((n) => instanceType(n, { unitResources: { cpu: '2', ram: '2Gi' } }), 'itcpu'),
  'spec',
  'must be exactly 1',
);
update(
  'instance type os changed',
  named((n) => instanceType(n), 'itos'),
  (s) => {
    s.os = 'windows';
  },
  'spec',
  'immutable',
  'create a new InstanceType',
);

describeRefusals('InstanceType', cases);
