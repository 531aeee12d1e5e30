// When the webhook's CA and serving certificate are renewed. A new CA is rotated in two steps: first
// it joins the published bundle while the old CA keeps signing what is served, and only once every
// apiserver has had time to load that bundle is it promoted to sign the serving certificate. The
// apiserver reads webhook configurations through its own watch, so serving a certificate from a CA
// it has not loaded yet would fail every admission call in between. The wait counts from when every
// CA bundle, read back from the apiserver, was seen to carry the staged CA, never from when it was
// staged: a patch refused or not yet made must not start it
// (docs/decisions/0016-leader-writes-webhook-certificates.md).

export interface RotationPolicy {
  caValidDays: number;
  servingValidDays: number;
  /** Renew when less than this fraction of a certificate's life remains. */
  rotateAtRemainingFraction: number;
  /** How long every CA bundle carries a staged CA before it signs the serving certificate. */
  caPropagationMs: number;
}

export interface CertificateTimes {
  caNotAfter: number;
  servingNotAfter: number;
  /**
   * A staged CA, if any, and since when every webhook configuration's CA bundle, as read back from
   * the apiserver, has carried it: absent while one lacks it.
   */
  stagedCa?: { publishedSince?: number };
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
  if (times.stagedCa) {
    const since = times.stagedCa.publishedSince;
    // An expired CA is no longer trusted either: promoting then ends the outage soonest.
    if (caExpired || (since !== undefined && now - since >= policy.caPropagationMs))
      return { ca: 'promote', serving: true };
  } else if (caExpired) {
    // Nothing served can be trusted any more: waiting would only prolong the outage.
    return { ca: 'replace', serving: true };
  } else if (due(times.caNotAfter, policy.caValidDays)) {
    return { ca: 'stage', serving: due(times.servingNotAfter, policy.servingValidDays) };
  }
  return { ca: 'keep', serving: due(times.servingNotAfter, policy.servingValidDays) };
}

/**
 * Since when a staged CA counts as published: the first pass that saw every CA bundle carry it, kept
 * while they do; forgotten as soon as one does not, so the wait starts again once it is back.
 */
export function stagedCaPublishedSince(
  recorded: number | undefined,
  everyBundleCarriesIt: boolean,
  now: number,
): number | undefined {
  return everyBundleCarriesIt ? (recorded ?? now) : undefined;
}
