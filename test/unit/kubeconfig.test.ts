// The operator reads its kubeconfig without @kubernetes/client-node (about 60 MiB of memory to load),
// and leaves to the library only what it does not read itself.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readKubeconfig } from '../../src/kube/kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'kvpool-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, cluster: object, user: object): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'c',
      contexts: [
        { name: 'other', context: { cluster: 'x', user: 'x' } },
        { name: 'c', context: { cluster: 'k', user: 'u' } },
      ],
      clusters: [{ name: 'k', cluster }],
      users: [{ name: 'u', user }],
    }),
  );
  return path;
}

describe('readKubeconfig', () => {
  it('reads the current context: server, CA data, client certificate and key files, a token file', () => {
    writeFileSync(join(dir, 'client.crt'), 'CERT');
    writeFileSync(join(dir, 'client.key'), 'KEY');
    const path = kubeconfig(
      'certs',
      { server: 'https://10.0.0.1:6443', 'certificate-authority-data': Buffer.from('CA').toString('base64') },
      { 'client-certificate': 'client.crt', 'client-key': 'client.key', 'token-file': 'token' },
    );
    assert.deepEqual(readKubeconfig(path), {
      server: 'https://10.0.0.1:6443',
      ca: 'CA',
      cert: 'CERT',
      key: 'KEY',
      skipTLSVerify: false,
      token: undefined,
      tokenFile: join(dir, 'token'),
    });
  });

  it('leaves exec plugins, auth providers and proxies to the library', () => {
    const server = 'https://10.0.0.1:6443';
    assert.equal(readKubeconfig(kubeconfig('exec', { server }, { exec: { command: 'aws' } })), undefined);
    assert.equal(
      readKubeconfig(kubeconfig('basic', { server }, { username: 'a', password: 'b' })),
      undefined,
    );
    assert.equal(
      readKubeconfig(kubeconfig('proxy', { server, 'proxy-url': 'http://proxy:3128' }, { token: 't' })),
      undefined,
    );
  });

  it('builds a client from a token kubeconfig without loading @kubernetes/client-node', () => {
    const path = kubeconfig(
      'token',
      { server: 'https://127.0.0.1:6443', 'insecure-skip-tls-verify': true },
      { token: 'abc' },
    );
    // The child refuses to resolve the library; building the client must not need it.
    const script = `
      import { registerHooks } from 'node:module';
      registerHooks({
        resolve(specifier, context, next) {
          if (specifier.startsWith('@kubernetes/client-node')) throw new Error('loaded @kubernetes/client-node');
          return next(specifier, context);
        },
      });
      const { KubeClient } = await import(${JSON.stringify(new URL('../../src/kube/client.ts', import.meta.url).href)});
      const client = await KubeClient.fromKubeconfigFile(${JSON.stringify(path)});
      console.log(client.server);
      await client.close();
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'https://127.0.0.1:6443');
  });
});
