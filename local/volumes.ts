// The local cluster's storage: a default StorageClass `kvpool-local` whose volumes are directories in a
// node's own /var/lib, made when the scheduler has placed the claim's Pod (WaitForFirstConsumer) and
// removed with their claim. What a cloud's disk driver is to a real cluster, for the etcd of a store with
// replicated metadata; test infrastructure, not product.
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { StorageClass } from 'kubernetes-types/storage/v1.js';
import type { KubeClient } from '../src/kube/client.ts';
import type { KubeObject } from '../src/kube/object.ts';

export const storageClassName = 'kvpool-local';
const provisioner = 'kvpool.local/node-directory';
const selectedNode = 'volume.kubernetes.io/selected-node';
/** Inside a node, where its volumes live (its /var/lib is its own). */
const nodeDir = '/var/lib/kvpool-volumes';

export class LocalVolumes {
  private readonly client: KubeClient;
  /** The cluster's root: a node's /var/lib is `<root>/nodes/<node>/var/lib`. */
  private readonly root: string;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(client: KubeClient, root: string) {
    this.client = client;
    this.root = root;
  }

  async start(): Promise<void> {
    const storageClass: KubeObject<StorageClass> = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: {
        name: storageClassName,
        annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
      },
      provisioner,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'WaitForFirstConsumer',
    };
    await this.client.apply(storageClass, { fieldManager: 'kvpool-local' });
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch(() => undefined)
        .finally(() => {
          this.running = undefined;
        });
    }, 500);
  }

  private hostDir(node: string, volume: string): string {
    return join(this.root, 'nodes', node, 'var', 'lib', 'kvpool-volumes', volume);
  }

  private async pass(): Promise<void> {
    const claims = await this.client.list<KubeObject<PersistentVolumeClaim>>({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
    });
    for (const claim of claims.items) {
      const node = claim.metadata.annotations?.[selectedNode];
      if (claim.spec?.storageClassName !== storageClassName || claim.status?.phase !== 'Pending' || !node)
        continue;
      await this.provision(claim, node);
    }
    const volumes = await this.client.list<KubeObject<PersistentVolume>>({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
    });
    for (const pv of volumes.items) {
      if (pv.spec?.storageClassName !== storageClassName || pv.status?.phase !== 'Released') continue;
      const node = pv.metadata.annotations?.[selectedNode];
      if (node) rmSync(this.hostDir(node, pv.metadata.name!), { recursive: true, force: true });
      await this.client.delete({ apiVersion: 'v1', kind: 'PersistentVolume', name: pv.metadata.name! });
    }
  }

  private async provision(claim: KubeObject<PersistentVolumeClaim>, node: string): Promise<void> {
    const name = `pvc-${claim.metadata.uid}`;
    // Any user of the Pod may write it, as a volume whose driver applies fsGroup would let it.
    mkdirSync(this.hostDir(node, name), { recursive: true });
    chmodSync(this.hostDir(node, name), 0o777);
    const pv: KubeObject<PersistentVolume> = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name,
        annotations: { [selectedNode]: node, 'pv.kubernetes.io/provisioned-by': provisioner },
      },
      spec: {
        storageClassName,
        capacity: { storage: claim.spec?.resources?.requests?.storage ?? '1Gi' },
        accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        hostPath: { path: `${nodeDir}/${name}`, type: 'Directory' },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: claim.metadata.namespace,
          name: claim.metadata.name,
          uid: claim.metadata.uid,
        },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
            ],
          },
        },
      },
    };
    await this.client.apply(pv, { fieldManager: 'kvpool-local' });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
