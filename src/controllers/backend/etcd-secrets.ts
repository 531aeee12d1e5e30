// The TLS material of a store's own etcd (decision 50): a CA made for that etcd alone, the members'
// serving and peer certificates and the masters' client certificate, in one Secret <name>-etcd-tls
// (created at once, so never half made); etcd mounts its items, the leader Pods theirs. The CA's key
// is not kept, so nothing else can ever be signed for that etcd.
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { ApiError } from '../../kube/errors.ts';
import type { KubeObject } from '../../kube/object.ts';
import { createCertificateAuthority } from '../../kube/pki.ts';
import { metadataReplicated, resolveEtcd } from '../../vocabulary/backend-spec.ts';
import { childMetadata, etcdComponent, etcdSecretName } from '../../vocabulary/store-objects.ts';
import { etcdServerHosts } from './render-etcd.ts';

/** Ten years: the etcd of a store lives as long as the store; see decision 50 for replacing it. */
const validDays = 3650;

const b64 = (text: string) => Buffer.from(text).toString('base64');

function secret(
  backend: KVCacheBackend,
  namespace: string,
  name: string,
  component: string,
  files: Record<string, string>,
): KubeObject<Secret> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: childMetadata(backend, namespace, name, component),
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, b64(v)])),
  };
}

/** The files of each side: etcd's (serving, peer and peer-client certificates) and the masters' client's. */
export interface EtcdTlsFiles {
  server: Record<string, string>;
  client: Record<string, string>;
}

/** A new CA and the certificates it signs for one etcd; `hosts` are the names etcd is reached by. */
export async function makeEtcdTls(caName: string, hosts: string[]): Promise<EtcdTlsFiles> {
  const ca = await createCertificateAuthority(caName, validDays);
  const server = await ca.issue({ commonName: 'etcd', hosts, usage: 'both', validDays });
  // Without names: etcd checks the names of a peer's client certificate against its address.
  const peerClient = await ca.issue({ commonName: 'etcd-peer', usage: 'client', validDays });
  const client = await ca.issue({ commonName: 'kvpool-store-leader', usage: 'client', validDays });
  return {
    server: {
      'ca.crt': ca.certPem,
      'tls.crt': server.certPem,
      'tls.key': server.keyPem,
      'peer-client.crt': peerClient.certPem,
      'peer-client.key': peerClient.keyPem,
    },
    client: { 'ca.crt': ca.certPem, 'tls.crt': client.certPem, 'tls.key': client.keyPem },
  };
}

/** The Secret's keys: each side mounts its own items (render-etcd.ts, render-leader.ts). */
export const etcdSecretKeys = {
  ca: 'ca.crt',
  server: ['server.crt', 'server.key'],
  peerClient: ['peer-client.crt', 'peer-client.key'],
  client: ['client.crt', 'client.key'],
} as const;

/** A new CA and the one Secret holding what it signed for this store's etcd. */
export async function makeEtcdSecret(
  backend: KVCacheBackend,
  namespace: string,
): Promise<KubeObject<Secret>> {
  const tls = await makeEtcdTls(
    `kvpool etcd ${namespace}/${backend.metadata.name}`,
    etcdServerHosts(backend, namespace),
  );
  return secret(backend, namespace, etcdSecretName(backend), etcdComponent, {
    'ca.crt': tls.server['ca.crt']!,
    'server.crt': tls.server['tls.crt']!,
    'server.key': tls.server['tls.key']!,
    'peer-client.crt': tls.server['peer-client.crt']!,
    'peer-client.key': tls.server['peer-client.key']!,
    'client.crt': tls.client['tls.crt']!,
    'client.key': tls.client['tls.key']!,
  });
}

/**
 * Creates the etcd Secret of a backend that runs its own etcd unless it exists: one create, which the
 * apiserver refuses when the name is taken, so the operator needs no right to read Secrets. Done once
 * per backend and process.
 */
export class EtcdSecrets {
  private readonly made = new Set<string>();

  async ensure(backend: KVCacheBackend, client: KubeClient, namespace: string): Promise<void> {
    if (!metadataReplicated(backend) || !resolveEtcd(backend).managed) return;
    const uid = backend.metadata.uid ?? backend.metadata.name!;
    if (this.made.has(uid)) return;
    try {
      await client.create(await makeEtcdSecret(backend, namespace));
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409)) throw err;
    }
    this.made.add(uid);
  }
}
