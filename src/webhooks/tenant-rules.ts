// Who may name which store tenant (docs/decisions/0034-tenant-names-are-not-credentials.md). A tenant
// is the reuse domain of a Binding, so a container may name only a domain of a Binding in its own
// namespace; the injection and the operator write it from the Binding. The store authenticates no
// client: these rules refuse what admission can see (env, argv), not a tenant read from a file or
// chosen at run time. Pure.
import type { Container } from 'kubernetes-types/core/v1.js';
import type { ModelDeploymentRole } from '../api/model-deployment.ts';
import { tenantEnvName, tenantsNamedIn } from '../inject/tenant-naming.ts';

/** A tenant a namespace may use: a Binding in it and that Binding's domain. */
export interface BoundTenant {
  binding: string;
  domain: string;
}

/** One place a container names a tenant: its field path and the value, undefined when unreadable. */
interface Naming {
  at: string;
  what: string;
  value: string | undefined;
}

function namingsIn(at: string, text: string, within?: string): Naming[] {
  return tenantsNamedIn(text).map(({ key, value }) => ({
    at,
    what: within ? `${within}, which sets ${key},` : key,
    value,
  }));
}

/** Every tenant a container's env, command and args name, each with its field path. */
function containerNamings(
  field: string,
  env: readonly { name: string; value?: string; valueFrom?: unknown }[],
  argv: readonly (readonly [string, readonly string[]])[],
): Naming[] {
  const found: Naming[] = [];
  env.forEach((e, i) => {
    const at = `${field}.env[${i}]`;
    if (e.name === tenantEnvName)
      found.push({ at, what: tenantEnvName, value: e.valueFrom ? undefined : (e.value ?? '') });
    else if (e.value) found.push(...namingsIn(at, e.value, e.name));
  });
  for (const [list, args] of argv)
    args.forEach((arg, i) => {
      found.push(...namingsIn(`${field}.${list}[${i}]`, arg));
    });
  return found;
}

const domainList = (tenants: readonly BoundTenant[]) =>
  tenants.map((t) => `${t.domain} (KVCachePoolBinding ${t.binding})`).join(', ');

function describe(n: Naming): string {
  return n.value === undefined
    ? `${n.what} comes from valueFrom, which admission cannot read, so the store tenant it names cannot be checked`
    : `${n.what} names store tenant "${n.value}"`;
}

/**
 * A take-over role (roles[].command) writes its own store configuration. It may name a tenant only as
 * the deployment's Binding's domain: the operator writes no configuration for it, and any other value
 * would read and write another team's cache.
 */
export function takeOverTenantRefusals(
  role: ModelDeploymentRole,
  field: string,
  kvCache: { binding: string; tenant?: BoundTenant } | undefined,
): string[] {
  const namings = containerNamings(field, role.env ?? [], [['command', role.command ?? []]]);
  const fix =
    'or remove it and drop roles[].command (keep your arguments in extraArgs) so that the operator writes the tenant from the Binding';
  return namings.flatMap((n) => {
    if (!kvCache)
      return [
        `${n.at}: ${describe(n)}, but the deployment has no spec.kvCache, and a store tenant is the domain of the KVCachePoolBinding spec.kvCache.poolRef names; remove it, and to use the store set spec.kvCache and drop roles[].command so that the operator writes the tenant from the Binding`,
      ];
    const { binding, tenant } = kvCache;
    if (!tenant)
      return [
        `${n.at}: ${describe(n)}, and KVCachePoolBinding ${binding} does not exist, so it cannot be checked against the Binding's domain; create the Binding first, ${fix}`,
      ];
    if (n.value === tenant.domain) return [];
    return [
      `${n.at}: ${describe(n)}, but a role may use only its own Binding's domain, "${tenant.domain}" (KVCachePoolBinding ${binding}'s spec.domain.name): another tenant is another team's cache; set ${tenant.domain}, ${fix}`,
    ];
  });
}

/**
 * A Pod that names a tenant in a namespace holding Bindings: every tenant it names must be one of their
 * domains. Namespaces without a Binding are not judged (their Pods cannot reach a kvpool store where
 * NetworkPolicy is enforced, and may run a Mooncake store of their own).
 */
export function podTenantRefusals(
  spec: { containers: Container[]; initContainers?: Container[] },
  tenants: readonly BoundTenant[],
): string[] {
  if (tenants.length === 0) return [];
  const allowed = new Set(tenants.map((t) => t.domain));
  const lists = [
    ['containers', spec.containers],
    ['initContainers', spec.initContainers ?? []],
  ] as const;
  const namings = lists.flatMap(([list, containers]) =>
    containers.flatMap((c, i) =>
      containerNamings(`spec.${list}[${i}]`, c.env ?? [], [
        ['command', c.command ?? []],
        ['args', c.args ?? []],
      ]),
    ),
  );
  return namings
    .filter((n) => n.value === undefined || !allowed.has(n.value))
    .map(
      (n) =>
        `${n.at}: ${describe(n)}, but a Pod in this namespace may use only the domains of its KVCachePoolBindings: ${domainList(tenants)}; write one of them, or let the injection write it (label the Pod kvcache.gpustack.ai/inject=true and name the Binding in kvcache.gpustack.ai/binding)`,
    );
}
