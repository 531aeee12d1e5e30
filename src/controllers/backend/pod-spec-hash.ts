// A Pod template's fingerprint, carried by the template and so by every Pod made from it: a Pod whose
// fingerprint differs from its workload's runs an outdated template.
import { createHash } from 'node:crypto';
import type { PodTemplateSpec } from 'kubernetes-types/core/v1.js';
import { sortedKeys } from './render-hardening.ts';

export const podSpecHashAnnotation = 'kvcache.gpustack.ai/pod-spec-hash';

/**
 * sha256 of the template's canonical JSON without this hash and the `without` fields of its spec
 * (nodeSelector by default), so edits of those restart nothing.
 */
export function podSpecHash(
  template: PodTemplateSpec,
  without: readonly string[] = ['nodeSelector'],
): string {
  const metadata = { ...template.metadata };
  if (metadata.annotations) {
    const { [podSpecHashAnnotation]: _hash, ...rest } = metadata.annotations;
    if (Object.keys(rest).length) metadata.annotations = rest;
    else delete metadata.annotations;
  }
  const spec = Object.fromEntries(Object.entries(template.spec ?? {}).filter(([k]) => !without.includes(k)));
  const canonical = JSON.stringify(sortedKeys({ ...template, metadata, spec }));
  return createHash('sha256').update(canonical).digest('hex');
}
