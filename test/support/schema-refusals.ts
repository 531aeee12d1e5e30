// The objects and the suite of the schema-refusal tests: every shape and immutability rule the schema
// carries refuses a bad create or edit through the real apiserver, with a message that names the field
// and says how to fix it. One test file per kind fills its cases and runs them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import {
  type ManagedConnection,
  managedBackend,
  modelDeployment,
  runnerImage,
  instanceType as typedInstanceType,
} from '../builders/index.ts';
import { ensureNamespace, testClient, uniqueName } from './cluster.ts';

export const v1 = 'worker.gpustack.ai/v1';
export const ns = 'refusals';

export type Obj = KubeObject & { spec: Record<string, unknown> };

export function managed(name: string, members?: unknown[], leader: Record<string, unknown> = {}): Obj {
  return managedBackend(name, {
    leader,
    members: members ?? [
      { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '8Gi' },
    ],
  } as ManagedConnection) as Obj;
}

export function external(name: string, endpoints: unknown[]): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: { connection: { external: { endpoints } } },
  };
}

export const endpoints = (client = 'store:50051', admin = 'store:9003') => [
  { name: 'Client', address: client },
  { name: 'Admin', address: admin },
];

export function group(extra: Record<string, unknown>): Record<string, unknown> {
  return { nodeSelector: { kvcache: 'true' }, medium: 'DRAM', capacityPerMember: '1Gi', ...extra };
}

export function pool(name: string, spec: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCachePool',
    metadata: { name },
    spec: { backends: ['b'], quota: { total: '16Gi' }, ...spec },
  };
}

export function binding(name: string, spec: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCachePoolBinding',
    metadata: { name, namespace: ns },
    spec: {
      poolRef: { name: 'p' },
      quota: { ceiling: '8Gi' },
      domain: { blockSize: 16, dtype: 'bfloat16' },
      ...spec,
    },
  };
}

export function deployment(name: string, spec: Record<string, unknown> = {}): Obj {
  const built = modelDeployment(name, {
    metadata: { namespace: ns },
    spec: { engine: { name: 'vLLM', image: runnerImage }, kvCache: { poolRef: { name: 'team-a' } } },
    roles: [{ instanceType: 'local-cpu' }],
  });
  return { ...built, spec: { ...built.spec, ...spec } };
}

export function instanceType(name: string, spec: Record<string, unknown> = {}): Obj {
  const built = typedInstanceType(name);
  return { ...built, spec: { ...built.spec, ...spec } };
}

export interface Refusal {
  title: string;
  /** A refused create. */
  bad?: Obj;
  /** For a refused edit: a valid object to create first, and the edit. */
  base?: Obj;
  change?: (spec: Record<string, unknown>) => void;
  /** The field path the apiserver names, and text the message must carry (the fix). */
  field: string;
  says: string[];
}

export const named = (f: (n: string) => Obj, prefix: string) => f(uniqueName(prefix));

export function edit(base: Obj, change: (spec: Record<string, unknown>) => void): Obj {
  const copy = structuredClone(base);
  change(copy.spec);
  return copy;
}

/** One file's cases: create() and update() add a refused create or edit, describeRefusals() runs them. */
export function refusalCases() {
  const cases: Refusal[] = [];
  return {
    cases,
    create: (title: string, bad: Obj, field: string, ...says: string[]) => {
      cases.push({ title, bad, field, says });
    },
    update: (
      title: string,
      base: Obj,
      change: (spec: Record<string, unknown>) => void,
      field: string,
      ...says: string[]
    ) => {
      cases.push({ title, base, change, field, says });
    },
  };
}

/** A test per case: the apiserver refuses it with 422, a cause on the field, and the fix in the message. */
export function describeRefusals(kinds: string, cases: Refusal[]): void {
  describe(`schema refusals through the real apiserver: ${kinds}`, () => {
    let client: KubeClient;
    before(async () => {
      client = await testClient();
      await ensureNamespace(client, ns);
    });
    after(() => client.close());

    for (const c of cases) {
      it(`refuses ${c.title}`, async () => {
        const attempt = c.base
          ? client.create(c.base).then((created) => client.replace(edit(created, c.change!)))
          : client.create(c.bad!);
        const err = await attempt.then(
          () => assert.fail(`${c.title}: the apiserver accepted it`),
          (e: unknown) => e,
        );
        assert.ok(err instanceof ApiError, String(err));
        assert.equal(err.status, 422, err.message);
        assert.ok(
          err.causes.some((cause) => cause.field === c.field),
          `expected a cause on ${c.field}, got ${JSON.stringify(err.causes)}`,
        );
        for (const text of c.says)
          assert.ok(err.message.includes(text), `message lacks "${text}": ${err.message}`);
      });
    }
  });
}
