// What every cluster runs besides its nodes: cluster DNS (CoreDNS as Pods behind the kube-dns
// Service), with the permissions CoreDNS's kubernetes plugin uses.
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import type { ConfigMap, Service, ServiceAccount } from 'kubernetes-types/core/v1.js';
import type { ClusterRole, ClusterRoleBinding } from 'kubernetes-types/rbac/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';

const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    reload
    loadbalance
}
`;

export function clusterDns(
  image: string,
  serviceIp: string,
): KubeObject<ServiceAccount | ClusterRole | ClusterRoleBinding | ConfigMap | Deployment | Service>[] {
  const ns = 'kube-system';
  const labels = { 'k8s-app': 'kube-dns' };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: ns }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: ns },
      data: { Corefile: corefile },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: ns, labels },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            dnsPolicy: 'Default',
            priorityClassName: 'system-cluster-critical',
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'ScheduleAnyway',
                labelSelector: { matchLabels: labels },
              },
            ],
            tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }],
            containers: [
              {
                name: 'coredns',
                image,
                imagePullPolicy: 'IfNotPresent',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                  { name: 'metrics', containerPort: 9153, protocol: 'TCP' },
                ],
                resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '170Mi' } },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                livenessProbe: {
                  httpGet: { path: '/health', port: 8080 },
                  periodSeconds: 10,
                  failureThreshold: 5,
                },
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
                  readOnlyRootFilesystem: true,
                },
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: ns, labels },
      spec: {
        clusterIP: serviceIp,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
          { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
        ],
      },
    },
  ];
}
