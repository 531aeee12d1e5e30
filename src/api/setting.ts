// Setting: one named, cluster-wide operator setting (gpustack.ai/v1, namespaced in the operator namespace).
import { type Static, Type } from './schema.ts';

export const SettingSpec = Type.Object({
  value: Type.String({ maxLength: 4096 }),
});
export type SettingSpec = Static<typeof SettingSpec>;

/** The settings this operator reads, with the default each takes when no Setting object exists. */
export const settingDefaults = {
  'kv-cache-backend-image': 'kvpool/kvpool-store:0.1.0-mooncake0.3.13.post1',
  'model-deployment-kv-cache-dtype-owned': 'true',
  'model-deployment-tcp-tw-reuse': 'false',
  'image-pull-policy': 'IfNotPresent',
  'image-pull-secrets': '',
  'instance-general-resources-overcommit': 'true',
} as const;
export type SettingName = keyof typeof settingDefaults;
