// Service-account tokens for Pods, from the TokenRequest API and bound to the Pod (they stop working
// when it is deleted), refreshed once 80% of their lifetime has passed, as the kubelet does.
import type { KubeClient } from '../../kube/client.ts';
import { MountError } from './errors.ts';
import type { Pod } from './pod-types.ts';

interface CachedToken {
  token: string;
  refreshAt: number;
}

interface TokenRequestStatus {
  status: { token: string; expirationTimestamp: string };
}

export class TokenSource {
  private readonly client: KubeClient;
  private readonly cache = new Map<string, CachedToken>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** A token for the Pod's service account; cached until due for refresh. */
  async token(pod: Pod, audience: string | undefined, expirationSeconds = 3600): Promise<string> {
    const key = `${pod.metadata.uid}|${audience ?? ''}|${expirationSeconds}`;
    const cached = this.cache.get(key);
    if (cached && Date.now() < cached.refreshAt) return cached.token;
    const ns = pod.metadata.namespace ?? 'default';
    const sa = pod.spec.serviceAccountName ?? 'default';
    const requested = Date.now();
    try {
      const res = await this.client.request<TokenRequestStatus>(
        'POST',
        `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${encodeURIComponent(sa)}/token`,
        {
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: {
              ...(audience ? { audiences: [audience] } : {}),
              expirationSeconds,
              boundObjectRef: {
                apiVersion: 'v1',
                kind: 'Pod',
                name: pod.metadata.name,
                uid: pod.metadata.uid,
              },
            },
          },
        },
      );
      const expires = Date.parse(res.status.expirationTimestamp);
      const refreshAt = requested + 0.8 * (expires - requested);
      this.cache.set(key, { token: res.status.token, refreshAt });
      return res.status.token;
    } catch (err) {
      if (cached) return cached.token;
      throw new MountError(`failed to fetch token: ${(err as Error).message}`);
    }
  }

  /** Forgets the Pod's tokens. */
  forget(uid: string): void {
    for (const key of this.cache.keys()) if (key.startsWith(`${uid}|`)) this.cache.delete(key);
  }
}
