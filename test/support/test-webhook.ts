// The validating webhook entry the webhook tests register: ConfigMap creates in one namespace, sent
// to a test server that fails closed.
export function configMapCreateWebhook(name: string, url: string, namespace: string) {
  return {
    name,
    clientConfig: { url },
    rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 5,
  };
}
