// The admission webhook configurations this operator registers (pure): which requests reach which
// path, and how the apiserver reaches the server (a Service in a cluster, a URL on the local cluster).
import type {
  MatchCondition,
  MutatingWebhookConfiguration,
  RuleWithOperations,
  ValidatingWebhookConfiguration,
} from 'kubernetes-types/admissionregistration/v1.js';
import type { LabelSelector } from 'kubernetes-types/meta/v1.js';
import type { KubeObject } from '../kube/object.ts';

export interface WebhookReach {
  /** `https://host:port` of the webhook server; when set, used instead of the Service. */
  url?: string;
  service?: { namespace: string; name: string; port: number };
}

/** admissionregistration/v1 RuleWithOperations; kubernetes-types leaves out the Rule fields Go embeds. */
type HookRule = RuleWithOperations & { resources: string[]; scope?: string };

export interface HookSpec {
  name: string;
  path: string;
  rules: HookRule[];
  failurePolicy: 'Fail' | 'Ignore';
  objectSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  /** CEL the apiserver evaluates first: the hook is called only for requests matching all of them. */
  matchConditions?: MatchCondition[];
  /** `None` unless the hook writes (then only outside a dry run). */
  sideEffects?: 'None' | 'NoneOnDryRun';
}

export const validatingConfigurationName = 'kvpool-validation';
export const mutatingConfigurationName = 'kvpool-mutation';

function clientConfig(reach: WebhookReach, path: string, caBundle: string) {
  const ca = Buffer.from(caBundle).toString('base64');
  if (reach.url) return { url: `${reach.url}${path}`, caBundle: ca };
  return { service: { ...reach.service!, path }, caBundle: ca };
}

export function renderWebhookConfiguration(
  kind: 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration',
  name: string,
  hooks: HookSpec[],
  reach: WebhookReach,
  caBundle: string,
): KubeObject<ValidatingWebhookConfiguration | MutatingWebhookConfiguration> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: { name, labels: { 'app.kubernetes.io/part-of': 'kvpool' } },
    webhooks: hooks.map((h) => ({
      name: h.name,
      clientConfig: clientConfig(reach, h.path, caBundle),
      rules: h.rules.map((r) => ({ ...r, scope: '*' })),
      failurePolicy: h.failurePolicy,
      sideEffects: h.sideEffects ?? 'None',
      admissionReviewVersions: ['v1'],
      timeoutSeconds: 10,
      matchPolicy: 'Equivalent',
      ...(h.objectSelector ? { objectSelector: h.objectSelector } : {}),
      ...(h.namespaceSelector ? { namespaceSelector: h.namespaceSelector } : {}),
      ...(h.matchConditions ? { matchConditions: h.matchConditions } : {}),
      ...(kind === 'MutatingWebhookConfiguration' ? { reinvocationPolicy: 'IfNeeded' } : {}),
    })),
  };
}
