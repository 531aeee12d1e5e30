// Setting: one named, cluster-wide operator setting (gpustack.ai/v1, namespaced in the operator namespace).
import { type Static, Type } from './schema.ts';

/**
 * Every Setting the operator reads: its name, the default it takes when no Setting object exists, and
 * what it does. The one list the CRD's description, the chart's Settings and its README's table come from.
 */
export const settings = [
  {
    name: 'kv-cache-backend-image',
    default: 'kvpool/kvpool-store:0.1.0-mooncake0.3.13.post1',
    what: 'the image of managed backends whose spec.image is unset, a kvpool-store image; the chart sets it from store.image',
  },
  {
    name: 'kv-cache-image-pull-secrets',
    default: '',
    what: "Secrets in the operator namespace, comma-separated, every store Pod pulls its image with (leader, members, etcd, tier cleanup), beside a backend's spec.imagePullSecrets; the chart sets it from image.pullSecrets",
  },
  {
    name: 'model-deployment-kv-cache-dtype-owned',
    default: 'true',
    what: "render each Binding's dtype as --kv-cache-dtype on its engines, and refuse the flag in a role's arguments",
  },
  {
    name: 'instance-general-resources-overcommit',
    default: 'true',
    what: 'engine Pods request 100m CPU and 128Mi per unit instead of their limits',
  },
] as const;

export type SettingName = (typeof settings)[number]['name'];

/** The settings this operator reads, with the default each takes when no Setting object exists. */
export const settingDefaults = Object.fromEntries(settings.map((s) => [s.name, s.default])) as {
  [S in (typeof settings)[number] as S['name']]: S['default'];
};

/** A store image as people write it in spec.image: the project's kvpool-store image in a registry. */
export const storeImageExample = `registry.example.com/${settingDefaults['kv-cache-backend-image']}`;

export const SettingSpec = Type.Object(
  {
    value: Type.String({
      maxLength: 4096,
      description: `The setting's value, as a string ("true" or "false" for switches). Read by the operator: ${settings
        .map((s) => `${s.name} (${s.what}; default ${s.default})`)
        .join(', ')}. A Setting of any other name is not read.`,
    }),
  },
  { description: 'The value of the setting the object is named after.' },
);
export type SettingSpec = Static<typeof SettingSpec>;
