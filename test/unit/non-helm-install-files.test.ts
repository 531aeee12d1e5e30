// The non-Helm install as committed under deploy/: the documented uninstall is `kubectl delete -f
// deploy/install.yaml`, so that file may hold only the operator's own objects. The CRDs (deleting one
// deletes every object of its kind) and the namespace the stores run in ship in files of their own.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../images/toolchain.ts';
import { helmTemplate, installNamespace } from '../../scripts/manifests.ts';
import type { KubeObject } from '../../src/kube/object.ts';

const objectsOf = (text: string): KubeObject[] =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => Boolean(o?.kind));
const committed = (file: string): KubeObject[] => {
  const path = join(projectRoot, 'deploy', file);
  assert.ok(existsSync(path), `deploy/${file} is missing: run \`npm run manifests\``);
  return objectsOf(readFileSync(path, 'utf8'));
};
const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

describe('the non-Helm install files', () => {
  it('deploy/install.yaml, which the uninstall deletes, holds no CRD and not the stores’ namespace', () => {
    const deleted = committed('install.yaml').map(key);
    assert.deepEqual(
      deleted.filter((k) => k.startsWith('CustomResourceDefinition/') || k.startsWith('Namespace/')),
      [],
      'kubectl delete -f deploy/install.yaml would delete these, and every backend, pool, Binding, ' +
        'ModelDeployment and store with them',
    );
  });

  it('deploy/crds.yaml holds every CRD, deploy/namespace.yaml the namespace the stores run in', () => {
    const chart = objectsOf(helmTemplate(['--namespace', installNamespace, '--include-crds']));
    const chartCrds = chart.filter((o) => o.kind === 'CustomResourceDefinition').map(key);
    assert.equal(chartCrds.length, 6);
    assert.deepEqual(committed('crds.yaml').map(key).sort(), chartCrds.sort());
    assert.deepEqual(committed('namespace.yaml').map(key), [`Namespace//${installNamespace}`]);
  });

  it('the three files are the chart’s objects without its Settings and hooks, each once', () => {
    const chart = objectsOf(
      helmTemplate([
        '--namespace',
        installNamespace,
        '--include-crds',
        '--no-hooks',
        '--set',
        'settings.create=false',
      ]),
    ).map(key);
    const files = ['namespace.yaml', 'crds.yaml', 'install.yaml'].flatMap((f) => committed(f).map(key));
    assert.deepEqual([...files].sort(), [...chart].sort());
  });
});
