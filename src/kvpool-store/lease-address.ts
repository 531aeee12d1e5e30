// Lease references: `<namespace>/<name>` (the leader's --lease) and `k8s://<namespace>/<name>` (a
// member's MOONCAKE_MASTER when members address the leader by Lease); the holder is `host:port`.
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';

export interface LeaseRef {
  namespace: string;
  name: string;
}

const leaseScheme = 'k8s://';

/** `<namespace>/<name>`, or undefined when the text is not of that shape. */
export function parseLeaseRef(text: string): LeaseRef | undefined {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  return m ? { namespace: m[1]!, name: m[3]! } : undefined;
}

/** The Lease a `k8s://<namespace>/<name>` master address names; undefined for any other address. */
export function leaseOfMasterAddress(address: string | undefined): LeaseRef | undefined {
  if (!address?.startsWith(leaseScheme)) return undefined;
  const ref = parseLeaseRef(address.slice(leaseScheme.length));
  if (!ref) throw new Error(`MOONCAKE_MASTER=${address} is not of the form k8s://<namespace>/<lease>`);
  return ref;
}

export function leaseObjectRef(ref: LeaseRef) {
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ref.namespace, name: ref.name };
}

/** The Lease's holder identity; '' when nobody holds it or the Lease does not exist yet. */
export async function readLeaseHolder(client: KubeClient, ref: LeaseRef): Promise<string> {
  const lease = await client.find<KubeObject<Lease>>(leaseObjectRef(ref));
  return lease?.spec?.holderIdentity ?? '';
}
