// The seed ConfigMap as the API holds it now: one GET by name, bounded, that a replica makes as it wins
// the Lease. Its mounted copy can lag the API by up to the kubelet's sync period (decision 46).
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { KubeClient } from '../kube/client.ts';
import { ApiError } from '../kube/errors.ts';
import type { KubeObject } from '../kube/object.ts';
import { policyKey } from '../vocabulary/store-objects.ts';
import type { LeaseRef as ObjectName } from './lease-address.ts';
import type { SeedRead } from './tenant-policy-seed.ts';

/** An error as a log names it: the API's status and reason, or the error's name and code. */
export function describeReadError(err: unknown): string {
  if (err instanceof ApiError) return `${err.status} ${err.reason}: ${err.message}`;
  const e = err as Error & { code?: unknown; cause?: { code?: unknown } };
  // A system error's code (ECONNREFUSED, UND_ERR_…); a DOMException's numeric code says nothing more.
  const code = [e.code, e.cause?.code].find((c) => typeof c === 'string');
  return `${e.name ?? 'Error'}${code ? ` ${code}` : ''}: ${e.message ?? String(err)}`;
}

/** The seed's policy in the API; never throws: a failure is an answer of its own. */
export async function readSeedConfigMap(
  client: KubeClient,
  configMap: ObjectName,
  timeoutMs: number,
): Promise<SeedRead> {
  const path = `/api/v1/namespaces/${encodeURIComponent(configMap.namespace)}/configmaps/${encodeURIComponent(configMap.name)}`;
  try {
    const found = await client.request<KubeObject<ConfigMap>>('GET', path, {
      timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { kind: 'found', policy: found.data?.[policyKey] };
  } catch (err) {
    if (err instanceof ApiError && err.isNotFound) return { kind: 'absent' };
    return { kind: 'failed', error: describeReadError(err) };
  }
}
