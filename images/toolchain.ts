// The versions every component is built or installed at (toolchain.env) and the cache outside the
// checkout they land in, keyed by version, so every clone on this machine reuses them. Below both the
// image builder and the local cluster, which read them alike.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const projectRoot = resolve(import.meta.dirname, '..');

function readToolchainEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(projectRoot, 'toolchain.env'), 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!.replace(/^"|"$/g, '');
  }
  return out;
}

const versions = readToolchainEnv();

/** A value of toolchain.env; throws when it is not set there. */
export function toolchainValue(name: string): string {
  const value = versions[name];
  if (value === undefined) throw new Error(`toolchain.env does not set ${name}`);
  return value;
}

export const toolchain = {
  kubeVersion: versions.KUBE_VERSION!,
  etcdVersion: versions.ETCD_VERSION!,
  mooncakeVersion: versions.MOONCAKE_VERSION!,
  helmVersion: versions.HELM_VERSION!,
  helm4Version: versions.HELM4_VERSION!,
};

export function cacheDir(): string {
  return process.env.KVPOOL_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kvpool');
}
