// The Helm chart as Helm 3 and Helm 4 render it (no cluster): lint clean, the same objects from both,
// its defaults agree with the code's, least-privilege RBAC, and cert-manager on request.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { projectRoot } from '../../images/toolchain.ts';
import { helmBinary } from '../../local/toolchain.ts';
import { renderSettingsTable, settingsTableMarkers } from '../../scripts/chart-files.ts';
import { chartDir, helmTemplate } from '../../scripts/manifests.ts';
import { settingDefaults, settings } from '../../src/api/setting.ts';
import type { KubeObject } from '../../src/kube/object.ts';

type Obj = KubeObject & Record<string, unknown>;
/** Helm hooks (the uninstall step) run with their own account, tested on their own. */
const isHook = (o: Obj) => Boolean(o.metadata.annotations?.['helm.sh/hook']);
const render = (args: string[] = [], major: 3 | 4 = 3): Obj[] =>
  parseAllDocuments(helmTemplate(['--namespace', 'kvpool-system', '--include-crds', ...args], major))
    .map((d) => d.toJSON() as Obj | null)
    .filter((o): o is Obj => Boolean(o?.kind));
const find = (objs: Obj[], kind: string, name?: string) =>
  objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const key = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const certManager = ['--set', 'webhook.certificates.source=cert-manager'];

type Probe = { httpGet: { port: string } };
type DeploymentSpec = {
  replicas: number;
  template: {
    spec: {
      topologySpreadConstraints: { topologyKey: string }[];
      securityContext: { runAsNonRoot: boolean; seccompProfile: { type: string } };
      containers: {
        args: string[];
        readinessProbe: Probe;
        livenessProbe: Probe;
        resources: { requests: Record<string, string>; limits: Record<string, string> };
        securityContext: { capabilities: { drop: string[] }; allowPrivilegeEscalation: boolean };
      }[];
    };
  };
};
type Webhook = {
  clientConfig: { service: { name: string; namespace: string; port: number }; caBundle?: string };
  timeoutSeconds: number;
  failurePolicy: string;
};

function lint(major: 3 | 4, args: string[]): string {
  return execFileSync(helmBinary(major), ['lint', '--strict', chartDir, ...args], { encoding: 'utf8' });
}

describe('the kvpool chart', () => {
  for (const major of [3, 4] as const) {
    it(`passes helm lint --strict with Helm ${major}, by default and with cert-manager`, () => {
      for (const args of [[], certManager]) {
        const out = lint(major, args);
        assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
        assert.doesNotMatch(out, /\[(WARNING|ERROR)\]/, out);
      }
    });
  }

  it('renders the same objects with Helm 3 and Helm 4', () => {
    const byKey = (objs: Obj[]) => new Map(objs.map((o) => [key(o), o]));
    const three = byKey(render([], 3));
    const four = byKey(render([], 4));
    assert.deepEqual([...four.keys()].sort(), [...three.keys()].sort());
    for (const [k, o] of three) assert.deepEqual(four.get(k), o, k);
  });

  it('releases with the project: chart version, appVersion and the operator image tag', () => {
    const version = (
      JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }
    ).version;
    const chart = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, string>;
    assert.equal(chart.version, version);
    assert.equal(chart.appVersion, version);
    const [deployment] = find(render(), 'Deployment') as (Obj & {
      spec: { template: { spec: { containers: { image: string }[] } } };
    })[];
    assert.equal(deployment!.spec.template.spec.containers[0]!.image, `kvpool/kvpool-operator:${version}`);
  });

  it('ships the Settings the operator defaults to, so leaving them out (install.yaml) changes nothing', () => {
    const settings = find(render(), 'Setting') as (Obj & { spec: { value: string } })[];
    assert.deepEqual(
      Object.fromEntries(settings.map((s) => [s.metadata.name, s.spec.value])),
      settingDefaults,
    );
    assert.ok(settings.every((s) => s.metadata.namespace === 'kvpool-system'));
    const images = find(
      render(['--set', 'image.registry=registry.example.com/']),
      'Setting',
      'kv-cache-backend-image',
    );
    assert.equal(
      (images[0] as Obj & { spec: { value: string } }).spec.value,
      `registry.example.com/${settingDefaults['kv-cache-backend-image']}`,
    );
  });

  it('documents every Setting the operator reads, from the one list in the code, and no other', () => {
    const readme = readFileSync(join(chartDir, 'README.md'), 'utf8');
    const { begin, end } = settingsTableMarkers;
    const table = readme.slice(readme.indexOf(begin) + begin.length, readme.indexOf(end)).trim();
    assert.equal(table, renderSettingsTable(), 'the README table is stale: run `npm run manifests`');
    const read = new Set<string>(settings.map((s) => s.name));
    // Any page that calls something a Setting names one the operator reads.
    const pages = [
      join(projectRoot, 'README.md'),
      join(chartDir, 'README.md'),
      join(chartDir, 'values.yaml'),
      ...readdirSync(join(projectRoot, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => join(projectRoot, 'docs', f)),
    ];
    const named = /`([a-z0-9]+(?:-[a-z0-9]+)+)` Setting|Setting `?([a-z0-9]+(?:-[a-z0-9]+)+)/g;
    const unread = pages.flatMap((page) =>
      [...readFileSync(page, 'utf8').matchAll(named)]
        .map((m) => m[1] ?? m[2]!)
        .filter((name) => !read.has(name))
        .map((name) => `${page.slice(projectRoot.length + 1)}: ${name}`),
    );
    assert.deepEqual(unread, []);
    const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as {
      settings: { values: Record<string, string> };
    };
    assert.deepEqual(
      Object.keys(values.settings.values).filter((name) => !read.has(name)),
      [],
      'values.yaml sets a Setting the operator does not read',
    );
  });

  it('upgrades the worker CRDs as templates kept on uninstall; the Setting CRD installs first', () => {
    const crds = find(render(), 'CustomResourceDefinition');
    assert.deepEqual(crds.map((c) => c.metadata.name).sort(), [
      'instancetypes.worker.gpustack.ai',
      'kvcachebackends.worker.gpustack.ai',
      'kvcachepoolbindings.worker.gpustack.ai',
      'kvcachepools.worker.gpustack.ai',
      'modeldeployments.worker.gpustack.ai',
      'settings.gpustack.ai',
    ]);
    for (const crd of crds) {
      const kept = crd.metadata.annotations?.['helm.sh/resource-policy'] === 'keep';
      assert.equal(kept, crd.metadata.name !== 'settings.gpustack.ai', String(crd.metadata.name));
    }
    const templatesOnly = helmTemplate(['--namespace', 'kvpool-system']);
    assert.doesNotMatch(templatesOnly, /name: settings\.gpustack\.ai/, 'the Setting CRD is in crds/');
  });

  it('grants no wildcard, reads no Secret but its own certificate, and may only create a store etcd’s', () => {
    const objs = render().filter((o) => !isHook(o));
    const roles = [...find(objs, 'ClusterRole'), ...find(objs, 'Role')] as (Obj & {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
    })[];
    assert.equal(roles.length, 2);
    for (const rule of roles.flatMap((r) => r.rules)) {
      for (const list of [rule.apiGroups, rule.resources, rule.verbs])
        assert.ok(!list.includes('*'), JSON.stringify(rule));
    }
    const secretRules = roles
      .flatMap((r) => r.rules.map((rule) => ({ kind: r.kind, rule })))
      .filter(({ rule }) => rule.resources.includes('secrets'));
    assert.deepEqual(secretRules, [
      { kind: 'Role', rule: { apiGroups: [''], resources: ['secrets'], verbs: ['create'] } },
      {
        kind: 'Role',
        rule: {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['kvpool-webhook-certs'],
          verbs: ['get', 'update'],
        },
      },
    ]);
  });

  it('runs two spread replicas with a disruption budget, probes on the health port and a restricted securityContext', () => {
    const objs = render();
    const [deployment] = find(objs, 'Deployment') as (Obj & { spec: DeploymentSpec })[];
    const spec = deployment!.spec;
    assert.equal(spec.replicas, 2);
    const pod = spec.template.spec;
    assert.equal(pod.topologySpreadConstraints[0]!.topologyKey, 'kubernetes.io/hostname');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    const c = pod.containers[0]!;
    assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    for (const probe of [c.readinessProbe, c.livenessProbe]) assert.equal(probe.httpGet.port, 'health');
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
    assert.ok(c.args.includes('--webhook-service=kvpool-webhook'));
    const [pdb] = find(objs, 'PodDisruptionBudget') as (Obj & { spec: { minAvailable: number } })[];
    assert.equal(pdb!.spec.minAvailable, 1);
    assert.equal(
      find(render(['--set', 'operator.replicas=1']), 'PodDisruptionBudget').length,
      0,
      'none for one replica',
    );
  });

  it('is scraped: annotations on the operator Pods, a ServiceMonitor and a store PodMonitor only on request', () => {
    const objs = render();
    const [deployment] = find(objs, 'Deployment') as (Obj & {
      spec: { template: { metadata: { annotations?: Record<string, string> } } };
    })[];
    assert.deepEqual(deployment!.spec.template.metadata.annotations, {
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '8081',
      'prometheus.io/path': '/metrics',
    });
    assert.equal(find(objs, 'ServiceMonitor').length + find(objs, 'PodMonitor').length, 0, 'off by default');
    const on = render([
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.serviceMonitor.labels.release=prom',
    ]);
    const [sm] = find(on, 'ServiceMonitor') as (Obj & { spec: { endpoints: { port: string }[] } })[];
    assert.equal(sm!.metadata.labels?.release, 'prom');
    assert.equal(sm!.spec.endpoints[0]!.port, 'metrics');
    const [pm] = find(on, 'PodMonitor') as (Obj & {
      spec: {
        selector: { matchLabels: Record<string, string> };
        podMetricsEndpoints: { port: string; relabelings: { sourceLabels: string[]; action?: string }[] }[];
      };
    })[];
    assert.deepEqual(pm!.spec.selector.matchLabels, {
      'app.kubernetes.io/name': 'kv-cache-backend',
      'app.kubernetes.io/component': 'leader',
    });
    const endpoint = pm!.spec.podMetricsEndpoints[0]!;
    assert.equal(endpoint.port, 'metrics', 'the read-only metrics port, never the admin API');
    assert.deepEqual(endpoint.relabelings[0], {
      sourceLabels: ['__meta_kubernetes_pod_ready'],
      regex: 'true',
      action: 'keep',
    });
  });

  it('adds the monitoring namespace, and only it, to who may reach the store leaders’ read-only metrics port, never the admin port', () => {
    type Policy = Obj & {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: { ports: { port: number }[]; from?: Record<string, unknown>[] }[];
      };
    };
    const [np] = find(render(), 'NetworkPolicy') as Policy[];
    assert.deepEqual(np!.spec.podSelector.matchLabels, {
      'app.kubernetes.io/name': 'kv-cache-backend',
      'app.kubernetes.io/component': 'leader',
    });
    assert.deepEqual(np!.spec.policyTypes, ['Ingress']);
    assert.deepEqual(np!.spec.ingress, [
      {
        ports: [{ port: 9005, protocol: 'TCP' }],
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
    ]);
    const [wider] = find(
      render(['--set-json', 'metrics.store.networkPolicy.extraFrom=[{"ipBlock":{"cidr":"10.1.2.3/32"}}]']),
      'NetworkPolicy',
    ) as Policy[];
    assert.deepEqual(wider!.spec.ingress[0]!.from?.[1], { ipBlock: { cidr: '10.1.2.3/32' } });
    assert.deepEqual(
      wider!.spec.ingress.flatMap((rule) => rule.ports.map((p) => p.port)),
      [9005],
      'no peer the chart adds reaches the admin port (9003), which also serves writes',
    );
    assert.equal(
      find(render(['--set', 'metrics.store.networkPolicy.enabled=false']), 'NetworkPolicy').length,
      0,
    );
  });

  it('routes admission through the webhook Service, with the failure policy and timeout of the values', () => {
    const objs = render(['--set', 'webhook.failurePolicy=Ignore', '--set', 'webhook.timeoutSeconds=5']);
    const configs = [
      ...find(objs, 'ValidatingWebhookConfiguration'),
      ...find(objs, 'MutatingWebhookConfiguration'),
    ] as (Obj & { webhooks: Webhook[] })[];
    assert.equal(configs.length, 2);
    for (const w of configs.flatMap((c) => c.webhooks)) {
      assert.deepEqual(
        {
          name: w.clientConfig.service.name,
          namespace: w.clientConfig.service.namespace,
          port: w.clientConfig.service.port,
        },
        { name: 'kvpool-webhook', namespace: 'kvpool-system', port: 443 },
      );
      assert.equal(w.clientConfig.caBundle, undefined, 'the operator sets it');
      assert.equal(w.timeoutSeconds, 5);
      assert.equal(w.failurePolicy, 'Ignore');
    }
  });

  it('labels the namespace with the Pod Security level asked for, and refuses a level that does not exist', () => {
    const [ns] = find(render(['--set', 'podSecurity.level=baseline']), 'Namespace');
    for (const mode of ['enforce', 'audit', 'warn'])
      assert.equal(ns!.metadata.labels?.[`pod-security.kubernetes.io/${mode}`], 'baseline');
    assert.throws(
      () => render(['--set', 'podSecurity.level=strict']),
      /podSecurity\.level=strict: must be privileged, baseline or restricted/,
    );
  });

  it('releases kvpool’s objects before uninstall with a pre-delete Job whose account can do only that', () => {
    const hooks = render().filter(isHook);
    assert.deepEqual(hooks.map((h) => h.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Job',
      'Role',
      'RoleBinding',
      'ServiceAccount',
    ]);
    for (const h of hooks) assert.equal(h.metadata.annotations?.['helm.sh/hook'], 'pre-delete');
    const rules = hooks
      .filter((h) => h.kind.endsWith('Role'))
      .flatMap(
        (r) =>
          r.rules as {
            apiGroups: string[];
            resources: string[];
            verbs: string[];
            resourceNames?: string[];
          }[],
      );
    assert.deepEqual(rules, [
      {
        apiGroups: ['worker.gpustack.ai'],
        resources: ['kvcachebackends', 'kvcachepools', 'kvcachepoolbindings', 'modeldeployments'],
        verbs: ['list', 'patch'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        resourceNames: ['kvpool-validation'],
        verbs: ['delete'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations'],
        resourceNames: ['kvpool-mutation'],
        verbs: ['delete'],
      },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      {
        apiGroups: ['apps'],
        resources: ['deployments'],
        resourceNames: ['kvpool-operator'],
        verbs: ['get', 'patch'],
      },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'delete'] },
    ]);
    const [job] = find(hooks, 'Job') as (Obj & {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    })[];
    assert.deepEqual(job!.spec.template.spec.containers[0]!.args, [
      '--namespace=kvpool-system',
      '--deployment=kvpool-operator',
    ]);
    assert.equal(render(['--set', 'uninstall.releaseObjects=false']).filter(isHook).length, 0);
    assert.doesNotMatch(readFileSync(join(projectRoot, 'deploy/install.yaml'), 'utf8'), /helm\.sh\/hook/);
  });

  it('with cert-manager: a Certificate for every Service name, the CA injected, and the operator only reads', () => {
    const objs = render(certManager);
    const [cert] = find(objs, 'Certificate') as (Obj & {
      spec: { dnsNames: string[]; secretName: string };
    })[];
    assert.deepEqual(cert!.spec.dnsNames, [
      'kvpool-webhook',
      'kvpool-webhook.kvpool-system',
      'kvpool-webhook.kvpool-system.svc',
      'kvpool-webhook.kvpool-system.svc.cluster.local',
    ]);
    assert.equal(cert!.spec.secretName, 'kvpool-webhook-certs');
    assert.equal(find(objs, 'Issuer').length, 1, 'a self-signed Issuer when none is named');
    assert.equal(find(objs, 'Secret').length, 0, 'cert-manager creates the Secret');
    for (const c of [
      ...find(objs, 'ValidatingWebhookConfiguration'),
      ...find(objs, 'MutatingWebhookConfiguration'),
    ])
      assert.equal(
        c.metadata.annotations?.['cert-manager.io/inject-ca-from'],
        'kvpool-system/kvpool-webhook-certs',
      );
    const rules = find(objs, 'ClusterRole')
      .concat(find(objs, 'Role'))
      .filter((r) => !isHook(r))
      .flatMap((r) => r.rules as { resources: string[]; verbs: string[] }[]);
    assert.ok(
      !rules.some((r) => r.resources.some((x) => x.endsWith('webhookconfigurations'))),
      'no CA bundle to patch',
    );
    assert.deepEqual(
      rules.filter((r) => r.resources.includes('secrets')).map((r) => r.verbs),
      [['create'], ['get']],
    );
    const named = render([
      ...certManager,
      '--set',
      'webhook.certificates.certManager.issuerRef.name=corp-ca',
      '--set',
      'webhook.certificates.certManager.issuerRef.kind=ClusterIssuer',
    ]);
    assert.equal(find(named, 'Issuer').length, 0);
    assert.deepEqual(
      (find(named, 'Certificate')[0] as Obj & { spec: { issuerRef: unknown } }).spec.issuerRef,
      { kind: 'ClusterIssuer', name: 'corp-ca' },
    );
  });
});
