// What every store container runs with: the least privilege the store allows and bounded resources.
// Why each choice: docs/decisions/0023-store-least-privilege.md.
import type { MemberGroup } from '../../api/kvcache-backend.ts';
import { formatBinarySI, parseQuantityBytes } from '../../vocabulary/quantity.ts';

type SecurityContext = NonNullable<MemberGroup['securityContext']>;

/** The store image's user (images/recipes.ts: user 65532:0), which tier directories belong to. */
export const storeUser = 65532;

/** mooncake_master and the member service write nothing but scratch files here: the root stays read-only. */
export const scratchVolume = { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } };
export const scratchMount = { name: 'tmp', mountPath: '/tmp' };

export const leaderResources = {
  requests: { cpu: '250m', memory: '256Mi' },
  limits: { memory: '2Gi' },
};
// Room above the segment and buffers for the member process itself (Python, the transfer engine).
const memberOverheadBytes = 1n << 30n;
/** The store client's local buffer when the group sets none (MOONCAKE_LOCAL_BUFFER_SIZE's default). */
export const storeDefaultLocalBufferBytes = 1n << 30n;
/** A disk tier's staging buffer (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES's default, 1.25 GiB). */
export const storeOffloadBufferBytes = 5n << 28n;
export const smallJobResources = {
  requests: { cpu: '10m', memory: '16Mi' },
  limits: { memory: '64Mi' },
};

/** Objects with keys in sorted order, recursively, so output does not depend on input key order. */
export function sortedKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortedKeys) as T;
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([k, v]) => [k, sortedKeys(v)])) as T;
}

/** The user a container with these fabric capabilities and this group context runs as. */
export function effectiveUser(fabricCaps: string[], user?: SecurityContext): number {
  if (user?.runAsUser !== undefined) return user.runAsUser;
  // Without ambient capabilities an added capability takes effect for root alone.
  return fabricCaps.length && user?.runAsNonRoot !== true ? 0 : storeUser;
}

/**
 * A store container's securityContext: every capability dropped but the fabric's, no privilege
 * escalation, a read-only root, RuntimeDefault seccomp, a non-root user unless the fabric needs root.
 * The group's own fields win one by one; `capabilities.add` is the sorted union with the fabric's.
 */
export function storeSecurityContext(fabricCaps: string[], user?: SecurityContext) {
  const add = [...new Set([...fabricCaps, ...(user?.capabilities?.add ?? [])])].sort();
  const runAsUser = effectiveUser(fabricCaps, user);
  // The apiserver refuses allowPrivilegeEscalation: false beside privileged or CAP_SYS_ADMIN.
  const escalates = user?.privileged === true || add.some((c) => c.replace(/^CAP_/, '') === 'SYS_ADMIN');
  const { capabilities: _caps, ...rest } = user ?? {};
  return sortedKeys({
    ...(escalates ? {} : { allowPrivilegeEscalation: false }),
    readOnlyRootFilesystem: true,
    runAsNonRoot: runAsUser !== 0,
    runAsUser,
    seccompProfile: { type: 'RuntimeDefault' },
    ...rest,
    capabilities: { ...(add.length ? { add } : {}), drop: user?.capabilities?.drop ?? ['ALL'] },
  });
}

/**
 * A member's resources: it requests its segment (DRAM) and local buffer, may use the store's own
 * buffers (`bufferBytes`) and a GiB more for the process itself, and asks for the fabric's devices.
 */
export function memberResources(
  requestBytes: bigint,
  bufferBytes: bigint,
  fabricLimits: Record<string, string> | undefined,
) {
  return {
    requests: { cpu: '250m', ...(requestBytes > 0n ? { memory: formatBinarySI(requestBytes) } : {}) },
    limits: { memory: formatBinarySI(requestBytes + bufferBytes + memberOverheadBytes), ...fabricLimits },
  };
}

/** Bytes of a quantity, 0 when absent. */
export function bytesOf(quantity: string | number | undefined): bigint {
  return quantity === undefined ? 0n : parseQuantityBytes(quantity);
}
