// A Pod template's fingerprint, carried by the template and so by every Pod made from it: a Pod whose
// fingerprint differs from its workload's runs an outdated template.
import { createHash } from 'node:crypto';
import { sortedKeys } from './render-hardening.ts';

export const podSpecHashAnnotation = 'kvcache.gpustack.ai/pod-spec-hash';

/** sha256 of the template's canonical JSON without nodeSelector and this hash, so selector edits restart nothing. */
export function podSpecHash(template: { metadata?: object; spec?: object }): string {
  const metadata = { ...(template.metadata ?? {}) } as { annotations?: Record<string, string> };
  if (metadata.annotations) {
    const { [podSpecHashAnnotation]: _hash, ...rest } = metadata.annotations;
    if (Object.keys(rest).length) metadata.annotations = rest;
    else delete metadata.annotations;
  }
  const { nodeSelector: _selector, ...spec } = (template.spec ?? {}) as { nodeSelector?: unknown };
  const canonical = JSON.stringify(sortedKeys({ ...template, metadata, spec }));
  return createHash('sha256').update(canonical).digest('hex');
}
