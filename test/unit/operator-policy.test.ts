// The chart's ValidatingAdmissionPolicy for the operator's account, as Helm renders it (no cluster):
// bound to the account of the release's namespace, switchable, and judging a disk tier's directory by
// the very lists admission judges localDisks[].path with (src/api/tier-path.ts). What it admits and
// refuses on a real apiserver: test/integration/operator-policy.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { helmTemplate } from '../../scripts/manifests.ts';
import { systemDirectories, systemTrees } from '../../src/api/tier-path.ts';
import { localDiskVolume } from '../../src/controllers/backend/render-tier.ts';

interface Policy {
  kind: string;
  metadata: { name: string };
  spec: {
    policyName?: string;
    matchConditions?: { expression: string }[];
    variables?: { name: string; expression: string }[];
    validations?: { expression: string }[];
  };
}

const policies = (args: string[] = []) =>
  parseAllDocuments(helmTemplate(['--namespace', 'kvpool-system', ...args]))
    .map((d) => d.toJSON() as Policy | null)
    .filter((o): o is Policy => o?.kind?.startsWith('ValidatingAdmissionPolicy') ?? false);

describe('the operator policy in the chart', () => {
  it('binds a policy to the operator account of the release namespace', () => {
    const [policy, binding] = policies();
    assert.equal(policy?.kind, 'ValidatingAdmissionPolicy');
    assert.equal(binding?.spec.policyName, policy?.metadata.name);
    assert.equal(
      policy!.spec.matchConditions?.[0]?.expression,
      "request.userInfo.username == 'system:serviceaccount:kvpool-system:kvpool-operator'",
    );
    assert.deepEqual(policies(['--set', 'operatorPolicy.enabled=false']), []);
  });

  it('admits a disk tier only where admission admits localDisks[].path', () => {
    const [policy] = policies();
    const hostPath = policy!.spec.validations!.find((v) => v.expression.includes('hostPath'))!.expression;
    assert.ok(hostPath.includes(`v.name == '${localDiskVolume}'`));
    const directories = systemDirectories.filter((d) => d !== '/').map((d) => `'${d}'`);
    assert.ok(hostPath.includes(`[${directories.join(', ')}]`), 'the system directories of tier-path.ts');
    assert.ok(hostPath.includes(`'^(${systemTrees.join('|')})(/|$)'`), 'the system trees of tier-path.ts');
  });

  it('takes the member host paths an administrator lists as a CEL list', () => {
    const [policy] = policies(['--set-json', 'operatorPolicy.memberHostPaths=["/dev/hugepages"]']);
    const listed = policy!.spec.variables!.find((v) => v.name === 'memberHostPaths');
    assert.equal(listed?.expression, '["/dev/hugepages"]');
  });
});
