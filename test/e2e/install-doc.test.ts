// docs/install.md, run as written: every console block of the page, in order, on a cluster whose
// nodes hold only the cluster's own images (pause, CoreDNS), so the operator and the store run only
// if the page's push put them in the cluster's registry and the nodes pulled them from it. The one
// substitution is the page's declared placeholder, registry.example.com, for the registry's address.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorImage, storeImage } from '../../images/recipes.ts';
import { projectRoot } from '../../images/toolchain.ts';
import { fencedBlocks } from '../support/doc-blocks.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';

const page = join(projectRoot, 'docs', 'install.md');
const placeholder = 'registry.example.com';

/** Runs one block with bash (-e: its first failing command fails it); resolves with its output. */
function runBlock(block: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block], { cwd: projectRoot, env });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`exit ${code} running:\n${block}\n--- output ---\n${out}`)),
    );
  });
}

describe('docs/install.md runs as written against a cluster that pulls from its registry', () => {
  let e: E2ECluster;
  before(async () => {
    e = await startE2ECluster({ installKvpool: false, loadImages: false });
  });
  after(async () => {
    await e?.stop();
  });

  it('builds, pushes, installs with Helm and without, checks a store each time, and uninstalls', async () => {
    const registry = e.cluster.registry.address;
    const doc = readFileSync(page, 'utf8');
    assert.match(doc, new RegExp(`\`${placeholder.replaceAll('.', '\\.')}\` is the\\s+placeholder`));
    const blocks = fencedBlocks(doc, 'console');
    const all = blocks.join('\n');
    for (const step of [
      'npm run images -- kvpool-operator kvpool-store',
      'skopeo copy',
      'helm install',
      'helm uninstall',
      'deploy/install.yaml',
      'uninstall --namespace',
    ])
      assert.ok(all.includes(step), `docs/install.md has no console block with \`${step}\``);

    const env = {
      ...process.env,
      // kubectl, helm and skopeo of the cluster: its skopeo knows the registry speaks plain HTTP.
      PATH: `${join(e.cluster.root, 'bin')}:${process.env.PATH}`,
      KUBECONFIG: e.cluster.kubeconfigPath,
    };
    for (const [i, block] of blocks.entries()) {
      const started = Date.now();
      await runBlock(block.replaceAll(placeholder, registry), env);
      console.log(`block ${i + 1}/${blocks.length}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }

    // The nodes hold both images under the registry's name, and nothing from anywhere else.
    const pulled = new Set<string>();
    for (const node of e.cluster.nodes) {
      const images = JSON.parse(await e.cluster.node(node).exec(['crictl', 'images', '-o', 'json'])) as {
        images: { repoTags: string[] }[];
      };
      for (const tag of images.images.flatMap((i) => i.repoTags)) {
        assert.ok(!tag.startsWith('docker.io/kvpool/'), `${node} holds ${tag}, which no registry served`);
        if (tag.startsWith(`${registry}/`)) pulled.add(tag.slice(registry.length + 1));
      }
    }
    for (const image of [operatorImage, storeImage])
      assert.ok(
        pulled.has(image.replace(/^docker\.io\//, '')),
        `the nodes pulled ${[...pulled].join(', ') || 'nothing'} from the registry, not ${image}`,
      );
    // The uninstall left no operator running.
    assert.equal((await e.kubectl(['-n', 'gpustack-system', 'get', 'deploy', '-o', 'name'])).trim(), '');
  });
});
