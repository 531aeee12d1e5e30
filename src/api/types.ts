// Whole-object TypeScript types, derived from the schemas (never written by hand).
import type { ObjectMeta } from '../kube/object.ts';
import type { InstanceTypeSpec, InstanceTypeStatus } from './instance-type.ts';
import type { KVCacheBackendSpec, KVCacheBackendStatus } from './kvcache-backend.ts';
import type { KVCachePoolSpec, KVCachePoolStatus } from './kvcache-pool.ts';
import type { KVCachePoolBindingSpec, KVCachePoolBindingStatus } from './kvcache-pool-binding.ts';
import type { ModelDeploymentSpec, ModelDeploymentStatus } from './model-deployment.ts';
import type { SettingSpec } from './setting.ts';

interface Resource<K extends string, S, T = never> {
  apiVersion: string;
  kind: K;
  metadata: ObjectMeta;
  spec: S;
  status?: T;
}

export type KVCacheBackend = Resource<'KVCacheBackend', KVCacheBackendSpec, KVCacheBackendStatus>;
export type KVCachePool = Resource<'KVCachePool', KVCachePoolSpec, KVCachePoolStatus>;
export type KVCachePoolBinding = Resource<
  'KVCachePoolBinding',
  KVCachePoolBindingSpec,
  KVCachePoolBindingStatus
>;
export type ModelDeployment = Resource<'ModelDeployment', ModelDeploymentSpec, ModelDeploymentStatus>;
export type InstanceType = Resource<'InstanceType', InstanceTypeSpec, InstanceTypeStatus>;
export type Setting = Resource<'Setting', SettingSpec>;

/** The kinds whose status the operator writes. */
export type StatusWritten = KVCacheBackend | KVCachePool | KVCachePoolBinding | ModelDeployment;

/** An object's status as its kind's schema declares it (the TypeBox status's Static). */
export type StatusOf<O extends { status?: unknown }> = NonNullable<O['status']>;
