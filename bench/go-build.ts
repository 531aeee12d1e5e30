// Builds a bench's Go program into the component cache, keyed by the hash of its sources (go.mod, go.sum,
// *.go), so a rerun reuses the binary and an edit builds a new one. Like every cached build, it lands
// under a temporary name and is renamed into place once it linked.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { cacheDir } from '../images/toolchain.ts';

export function buildGoProgram(dir: string): string {
  const name = basename(dir);
  const hash = createHash('sha256');
  for (const file of readdirSync(dir).sort()) {
    if (file === 'go.mod' || file === 'go.sum' || file.endsWith('.go')) {
      hash.update(file).update(readFileSync(join(dir, file)));
    }
  }
  const dest = join(cacheDir(), 'bench', name, hash.digest('hex').slice(0, 16));
  const binary = join(dest, name);
  if (existsSync(binary)) return binary;
  console.log(`building ${name} (Go modules; cached in ${dest})`);
  mkdirSync(join(cacheDir(), 'tmp'), { recursive: true });
  const work = mkdtempSync(join(cacheDir(), 'tmp', `${name}-`));
  try {
    execFileSync('go', ['build', '-trimpath', '-o', join(work, name), '.'], {
      cwd: dir,
      stdio: 'inherit',
      env: { ...process.env, CGO_ENABLED: '0' },
    });
    mkdirSync(join(cacheDir(), 'bench', name), { recursive: true });
    rmSync(dest, { recursive: true, force: true });
    renameSync(work, dest);
    return binary;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
