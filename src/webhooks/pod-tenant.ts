// Admission of any Pod that names a store tenant itself (an env MOONCAKE_TENANT_ID, a tenant_id in its
// argv or env), opted in to injection or not: in a namespace holding Bindings, only their domains.
// The apiserver calls the hook only for such Pods (matchConditions), and passes them when the operator
// does not answer: it catches a wrong tenant written down, it is not the store's access control
// (docs/decisions/0034-tenant-names-are-not-credentials.md).
import type { KVCachePoolBinding } from '../api/types.ts';
import { tenantEnvName } from '../inject/tenant-naming.ts';
import type { KubeObject } from '../kube/object.ts';
import { type AdmissionHandler, allow, deny } from '../kube/webhook-server.ts';
import type { PoolInformers } from '../operator-io/informers.ts';
import type { OperatorContext } from '../operator-io/operator-context.ts';
import { domainOf } from '../vocabulary/domains.ts';
import { workerApiVersion } from '../vocabulary/identity.ts';
import type { HookSpec } from './configuration.ts';
import { judgeConfirmingRefusals } from './lookup.ts';
import type { AdmittedPod } from './pod-injection-target.ts';
import { type BoundTenant, podTenantRefusals } from './tenant-rules.ts';

const namesTenant = (text: string) => `${text}.lowerAscii().contains('tenant_id')`;

/** CEL: some container or init container names a tenant (what tenantsNamedIn reads, found cheaply). */
const namesATenant = [
  '[object.spec.containers, has(object.spec.initContainers) ? object.spec.initContainers : []]',
  '.exists(list, list.exists(c,',
  ` (has(c.env) && c.env.exists(e, e.name == '${tenantEnvName}' || (has(e.value) && ${namesTenant('e.value')}))) ||`,
  ` (has(c.command) && c.command.exists(a, ${namesTenant('a')})) ||`,
  ` (has(c.args) && c.args.exists(a, ${namesTenant('a')}))))`,
].join('');

export const podTenantHook: HookSpec = {
  name: 'tenant.kvcache.gpustack.ai',
  path: '/validate-pod-tenant',
  rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
  failurePolicy: 'Ignore',
  matchConditions: [{ name: 'names-a-store-tenant', expression: namesATenant }],
};

/** The tenants Pods in `namespace` may name: the domains of its Bindings. */
async function boundTenants(
  ctx: OperatorContext,
  i: PoolInformers,
  namespace: string,
  fresh: boolean,
): Promise<BoundTenant[]> {
  const bindings = fresh
    ? (
        await ctx.client.list<KVCachePoolBinding>({
          apiVersion: workerApiVersion,
          kind: 'KVCachePoolBinding',
          namespace,
        })
      ).items
    : i.bindings.list(namespace);
  return bindings.map((b) => ({ binding: b.metadata.name!, domain: domainOf(b) }));
}

export function podTenantAdmission(
  ctx: OperatorContext,
  i: PoolInformers,
): AdmissionHandler<KubeObject<AdmittedPod>> {
  return async (req) => {
    const pod = req.object!;
    const ns = req.namespace ?? pod.metadata.namespace ?? 'default';
    const refusals = await judgeConfirmingRefusals(
      async (fresh) => podTenantRefusals(pod.spec, await boundTenants(ctx, i, ns, fresh)),
      (r) => r.length > 0,
    );
    return refusals.length ? deny(`store tenant: ${refusals.join('; ')}`) : allow();
  };
}
