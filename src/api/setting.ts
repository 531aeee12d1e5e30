// Setting: one named, cluster-wide operator setting (gpustack.ai/v1, namespaced in the operator namespace).
import { type Static, Type } from './schema.ts';

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

export const SettingSpec = Type.Object(
  {
    value: Type.String({
      maxLength: 4096,
      description: `The setting's value, as a string ("true" or "false" for switches). Read by the operator: kv-cache-backend-image (the image of backends naming none; default ${settingDefaults['kv-cache-backend-image']}), model-deployment-kv-cache-dtype-owned (render each Binding's dtype as --kv-cache-dtype and refuse the flag elsewhere; default true) and instance-general-resources-overcommit (request 100m CPU and 128Mi per unit instead of the limits; default true).`,
    }),
  },
  { description: 'The value of the setting the object is named after.' },
);
export type SettingSpec = Static<typeof SettingSpec>;
