// The master's tenant ledger starts from the pool reconciler's ConfigMap (the seed) when there is one,
// else from an empty ledger. A seed that exists but cannot be copied is an error, never an empty ledger:
// an empty ledger would silently refuse every tenant.
import { copyFileSync, statSync, writeFileSync } from 'node:fs';

export const emptyPolicy = 'version: 1\ntenants: []\n';

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

/** Writes the policy file the master reads; returns where it came from. Throws on a failed copy. */
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
