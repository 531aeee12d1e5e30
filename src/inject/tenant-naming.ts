// Where a container names a store tenant itself: the variable SGLang and Mooncake's client read, and the
// tenant_id key of a Mooncake client config written inline (JSON, escaped JSON in a shell string, or a
// key=value pair). The store authenticates no client, so a tenant named here is taken as given. Pure.

/** The variable SGLang (and Mooncake's client without a config file) reads the tenant from. */
export const tenantEnvName = 'MOONCAKE_TENANT_ID';

/** A tenant assignment: the key, quotes or escapes around it, `:` or `=`, then the value as far as it goes. */
const tenantAssignment = /((?:MOONCAKE_)?tenant_id)\\*["']?\s*[:=]\s*\\*["']?([^\s"'\\,;&|})]*)/gi;

/** Every tenant `text` assigns (`MOONCAKE_TENANT_ID=x`, `"tenant_id": "x"`), in order, with the key as written. */
export function tenantsNamedIn(text: string): { key: string; value: string }[] {
  return [...text.matchAll(tenantAssignment)].map((m) => ({ key: m[1]!, value: m[2]! }));
}
