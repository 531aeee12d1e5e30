// A reuse domain's claim: a Lease in the operator's namespace whose name is derived from the backend and
// the domain, created if absent when a Binding is admitted, so the apiserver itself refuses a second
// holder (as it does with IPAddress objects for Service IPs). Pure: naming, rendering and judging.
// Why a Lease, and how a claim is freed or taken over: docs/decisions/0040-binding-domain-claims.md.
import { createHash } from 'node:crypto';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { KubeObject } from '../kube/object.ts';

export const claimComponent = 'kvcache-domain-claim';
/** The label every claim carries: what uninstall removes, and what tells a claim from another Lease. */
export const claimSelector = `app.kubernetes.io/component=${claimComponent}`;
export const claimBackendAnnotation = 'kvcache.gpustack.ai/backend';
export const claimDomainAnnotation = 'kvcache.gpustack.ai/domain';
/** `namespace/name` of the Binding holding the claim; its uid is the Lease's holderIdentity. */
export const claimBindingAnnotation = 'kvcache.gpustack.ai/binding';
/** How long a claim whose Binding is absent is kept for its create to land (the apiserver's request timeout). */
export const defaultClaimGraceMs = 60_000;

export type DomainClaim = KubeObject<Lease>;

export interface ClaimHolder {
  namespace: string;
  name: string;
  uid: string;
}

/** The claim's name: a DNS-1123 label from a hash of backend and domain (both may be long). */
export function claimName(backend: string, domain: string): string {
  const digest = createHash('sha256').update(`${backend}\n${domain}`).digest('hex');
  return `kvpool-domain-${digest.slice(0, 40)}`;
}

/** A Lease's time (MicroTime): RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export function renderClaim(
  namespace: string,
  backend: string,
  domain: string,
  holder: ClaimHolder,
  nowMs: number,
): DomainClaim {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: claimName(backend, domain),
      namespace,
      labels: { 'app.kubernetes.io/component': claimComponent, 'app.kubernetes.io/part-of': 'kvpool' },
      annotations: {
        [claimBackendAnnotation]: backend,
        [claimDomainAnnotation]: domain,
        [claimBindingAnnotation]: `${holder.namespace}/${holder.name}`,
      },
    },
    spec: { holderIdentity: holder.uid, acquireTime: microTime(nowMs) },
  };
}

/** The same claim handed to another holder (the live object's resourceVersion makes it conditional). */
export function takeOverClaim(live: DomainClaim, holder: ClaimHolder, nowMs: number): DomainClaim {
  return {
    ...live,
    metadata: {
      ...live.metadata,
      annotations: {
        ...live.metadata.annotations,
        [claimBindingAnnotation]: `${holder.namespace}/${holder.name}`,
      },
    },
    spec: { ...live.spec, holderIdentity: holder.uid, acquireTime: microTime(nowMs) },
  };
}

/** The Binding a claim names (namespace and name), as written on it. */
export function claimHolderRef(claim: DomainClaim): { namespace: string; name: string } | undefined {
  const ref = claim.metadata.annotations?.[claimBindingAnnotation];
  const slash = ref?.indexOf('/') ?? -1;
  if (!ref || slash <= 0) return undefined;
  return { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
}

export type ClaimVerdict =
  /** The claim is the requester's own (a retried admission, or the controller's pass). */
  | { kind: 'ours' }
  /** A Binding that exists holds it. */
  | { kind: 'held'; holder: { namespace: string; name: string } }
  /** Its Binding does not exist yet: its create may still land; the claim lapses in `lapsesInMs`. */
  | { kind: 'pending'; lapsesInMs: number }
  /** Its Binding is gone (deleted, or its create never landed) and the grace has passed. */
  | { kind: 'takeOver' }
  /** A Lease of that name that kvpool did not make. */
  | { kind: 'foreign' };

/**
 * Who may have a domain whose claim exists. `holderBinding` is the Binding the claim names, read live
 * (undefined when absent): a Binding of that name with another uid is a new one, not the holder.
 */
export function judgeClaim(
  claim: DomainClaim,
  uid: string,
  holderBinding: { metadata: { uid?: string } } | undefined,
  nowMs: number,
  graceMs: number,
): ClaimVerdict {
  if (claim.metadata.labels?.['app.kubernetes.io/component'] !== claimComponent) return { kind: 'foreign' };
  const holderUid = claim.spec?.holderIdentity;
  if (holderUid === uid) return { kind: 'ours' };
  const ref = claimHolderRef(claim);
  if (ref && holderUid && holderBinding?.metadata.uid === holderUid) return { kind: 'held', holder: ref };
  const since = Date.parse(claim.spec?.acquireTime ?? claim.metadata.creationTimestamp ?? '');
  const age = Number.isNaN(since) ? Number.POSITIVE_INFINITY : nowMs - since;
  return age >= graceMs ? { kind: 'takeOver' } : { kind: 'pending', lapsesInMs: graceMs - age };
}
