// When the webhook's CA and serving certificate are renewed. A new CA is rotated in two steps: first
// it joins the published bundle while the old CA keeps signing what is served, and only once every
// apiserver has had time to load that bundle is it promoted to sign the serving certificate. The
// apiserver reads webhook configurations through its own watch, so serving a certificate from a CA
// it has not loaded yet would fail every admission call in between.

export interface RotationPolicy {
  caValidDays: number;
  servingValidDays: number;
  /** Renew when less than this fraction of a certificate's life remains. */
  rotateAtRemainingFraction: number;
  /** How long a staged CA is published before it signs the serving certificate. */
  caPropagationMs: number;
}

export interface CertificateTimes {
  caNotAfter: number;
  servingNotAfter: number;
  /** When the staged CA, if any, was published. */
  stagedCaSince?: number;
}

export interface RotationPlan {
  /** keep the CA; stage a new one; promote the staged one; or replace it at once (none or expired). */
  ca: 'keep' | 'stage' | 'promote' | 'replace';
  /** Issue a new serving certificate (from the CA the step leaves signing). */
  serving: boolean;
}

export function planRotation(
  times: CertificateTimes | undefined,
  now: number,
  policy: RotationPolicy,
): RotationPlan {
  if (!times) return { ca: 'replace', serving: true };
  const due = (notAfter: number, validDays: number) =>
    notAfter - now < validDays * 86_400_000 * policy.rotateAtRemainingFraction;
  const caExpired = times.caNotAfter <= now;
  if (times.stagedCaSince !== undefined) {
    if (caExpired || now - times.stagedCaSince >= policy.caPropagationMs)
      return { ca: 'promote', serving: true };
  } else if (caExpired) {
    // Nothing served can be trusted any more: waiting would only prolong the outage.
    return { ca: 'replace', serving: true };
  } else if (due(times.caNotAfter, policy.caValidDays)) {
    return { ca: 'stage', serving: due(times.servingNotAfter, policy.servingValidDays) };
  }
  return { ca: 'keep', serving: due(times.servingNotAfter, policy.servingValidDays) };
}
