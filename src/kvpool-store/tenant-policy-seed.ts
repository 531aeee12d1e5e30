// The master's tenant ledger starts from the pool reconciler's ConfigMap (the seed) when there is one,
// else from an empty ledger. A new leader reads the seed from the API; its mounted copy, which lags by
// up to the kubelet's sync period, stands in only when that read fails (decision 46). A seed that exists
// but cannot be copied is an error, never an empty ledger: an empty ledger would silently refuse every
// tenant.
import { copyFileSync, statSync, writeFileSync } from 'node:fs';

export const emptyPolicy = 'version: 1\ntenants: []\n';

/** What a GET of the seed ConfigMap answered. */
export type SeedRead =
  /** The ConfigMap, with its policy (undefined when it holds none). */
  | { kind: 'found'; policy: string | undefined }
  /** NotFound: the operator has written no seed yet. */
  | { kind: 'absent' }
  /** No answer to go by (refused, timed out, unreachable), and why. */
  | { kind: 'failed'; error: string };

/**
 * The policy to start from, by the API's answer: its seed, or the empty ledger when it has none (as a
 * mount of an absent ConfigMap has no file). Undefined when the read failed: the mounted copy stands in.
 */
export function policyFromApi(read: SeedRead): string | undefined {
  switch (read.kind) {
    case 'found':
      return read.policy ?? emptyPolicy;
    case 'absent':
      return emptyPolicy;
    case 'failed':
      return undefined;
  }
}

/** Writes a policy read from the API as the file the master reads. Throws on a failed write. */
export function writeTenantPolicy(policy: string, file: string): void {
  try {
    writeFileSync(file, policy);
  } catch (err) {
    throw new Error(`cannot write the tenant policy to ${file}: ${(err as Error).message}`);
  }
}

function seedExists(seed: string | undefined): boolean {
  if (!seed) return false;
  try {
    statSync(seed);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new Error(`cannot read the tenant policy seed ${seed}: ${(err as Error).message}`);
  }
}

/** Writes the policy file the master reads from the mounted seed; returns where it came from. Throws on a failed copy. */
export function seedTenantPolicy(seed: string | undefined, file: string): 'seed' | 'empty' {
  if (!seedExists(seed)) {
    writeFileSync(file, emptyPolicy);
    return 'empty';
  }
  try {
    copyFileSync(seed!, file);
  } catch (err) {
    throw new Error(`cannot copy the tenant policy seed ${seed} to ${file}: ${(err as Error).message}`);
  }
  return 'seed';
}
