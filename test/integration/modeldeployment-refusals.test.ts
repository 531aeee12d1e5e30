// ModelDeployment: every shape and immutability rule (kvCache, engine, roles, volumes) refuses a bad
// create or edit through the real apiserver, naming the field and the fix.
import { deployment, describeRefusals, named, refusalCases } from '../support/schema-refusals.ts';

const { cases, create, update } = refusalCases();

// ModelDeployment.
update(
  'kvCache re-pointed',
  named((n) => deployment(n), 'kvre'),
  (s) => {
    s.kvCache = { poolRef: { name: 'other' } };
  },
  'spec.kvCache',
  'spec.kvCache is immutable',
  'create a new ModelDeployment',
);
update(
  'kvCache removed',
  named((n) => deployment(n), 'kvrm'),
  (s) => {
    delete s.kvCache;
  },
  'spec.kvCache',
  'spec.kvCache is immutable',
);
update(
  'kvCache added',
  named((n) => deployment(n, { kvCache: undefined }), 'kvadd'),
  (s) => {
    s.kvCache = { poolRef: { name: 'team-a' } };
  },
  'spec.kvCache',
  'spec.kvCache is immutable',
);
create(
  'kvCache with an empty poolRef',
  named((n) => deployment(n, { kvCache: { poolRef: { name: '' } } }), 'kvempty'),
  'spec.kvCache.poolRef.name',
  'must name a KVCachePoolBinding in this namespace',
);
update(
  'engine changed',
  named((n) => deployment(n), 'engine'),
  (s) => {
    s.engine = { name: 'SGLang', image: 'x' };
  },
  'spec.engine.name',
  'spec.engine.name is immutable',
  'create a new ModelDeployment',
);
update(
  'model changed',
  named((n) => deployment(n), 'model'),
  (s) => {
    s.model = { name: 'other' };
  },
  'spec.model',
  'spec.model is immutable',
);
create(
  'Server mixed with Prefill',
  named(
    (n) =>
      deployment(n, {
        roles: [
          { name: 'a', instanceType: 't' },
          { name: 'b', kind: 'Prefill', instanceType: 't' },
        ],
      }),
    'mix',
  ),
  'spec.roles',
  'cannot be mixed',
  'separate deployments',
);
update(
  'role kind changed',
  named(
    (n) =>
      deployment(n, {
        roles: [
          { name: 'p', kind: 'Prefill', instanceType: 't' },
          { name: 'd', kind: 'Decode', instanceType: 't' },
        ],
      }),
    'rolekind',
  ),
  (s) => {
    (s.roles as { kind: string }[])[0]!.kind = 'Decode';
    (s.roles as { kind: string }[])[1]!.kind = 'Prefill';
  },
  'spec.roles',
  'kind is immutable',
  'new name',
);

create(
  'a privileged engine',
  named((n) => deployment(n, { roles: [{ name: 'server', instanceType: 't', privileged: true }] }), 'priv'),
  'spec.roles[0].privileged',
  "may not ask for what Pod Security 'baseline' forbids",
  'kvcache.gpustack.ai/inject=true',
);
create(
  'a hostPath volume',
  named(
    (n) =>
      deployment(n, {
        roles: [
          {
            name: 'server',
            instanceType: 't',
            additionalVolumes: [
              { name: 'scratch', emptyDir: {} },
              { name: 'node', hostPath: { path: '/var/lib' }, mountPath: '/host' },
            ],
          },
        ],
      }),
    'hostpath',
  ),
  'spec.roles[0].additionalVolumes',
  'hostPath',
  "may not ask for what Pod Security 'baseline' forbids",
  'persistentVolumeClaim',
);

describeRefusals('ModelDeployment', cases);
