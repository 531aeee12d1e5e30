// What the admission rules decide of an object built in test/builders/: a ModelDeployment's errors, and
// a Pod's injection patch or refusal.
import assert from 'node:assert/strict';
import type { ModelDeployment } from '../../src/api/types.ts';
import type { JsonPatchOp } from '../../src/kube/webhook-server.ts';
import { validateModelDeployment } from '../../src/webhooks/modeldeployment-rules.ts';
import { type AdmittedPod, planPodInjection } from '../../src/webhooks/pod-injection-rules.ts';
import { injectionContext, modelDeploymentContext } from '../builders/index.ts';

export const errorsOf = (obj: ModelDeployment, old?: ModelDeployment, ctx = modelDeploymentContext()) =>
  validateModelDeployment(obj, old, ctx).errors;

export function accepted(p: AdmittedPod, c = injectionContext()): JsonPatchOp[] {
  const v = planPodInjection(p, c);
  assert.ok(v.ok, v.ok ? '' : v.message);
  return v.patch;
}

export function refused(p: AdmittedPod, c = injectionContext()): string {
  const v = planPodInjection(p, c);
  assert.ok(!v.ok, 'expected a refusal');
  return v.message;
}

export const op = (patch: JsonPatchOp[], path: string) => patch.find((o) => o.path === path);
