// Admission of KVCacheBackend: the rules the schema cannot judge (backend-rules.ts), answered with
// every refusal at once so a user fixes them in one round.
import type { KVCacheBackend } from '../api/types.ts';
import type { AdmissionHandler } from '../kube/webhook-server.ts';
import type { Settings } from '../operator-io/settings.ts';
import { validateBackend } from './backend-rules.ts';
import type { HookSpec } from './configuration.ts';
import { verdictOf } from './findings.ts';

export const backendHook: HookSpec = {
  name: 'kvcachebackends.worker.gpustack.ai',
  path: '/validate-kvcachebackend',
  rules: [
    {
      apiGroups: ['worker.gpustack.ai'],
      apiVersions: ['v1'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['kvcachebackends'],
    },
  ],
  failurePolicy: 'Fail',
};

export function backendAdmission(settings: Settings): AdmissionHandler<KVCacheBackend> {
  return (req) => {
    const obj = req.object!;
    const old = req.operation === 'UPDATE' ? req.oldObject : undefined;
    return verdictOf(
      validateBackend(obj, old, { settingImage: settings.get('kv-cache-backend-image').trim() }),
    );
  };
}
