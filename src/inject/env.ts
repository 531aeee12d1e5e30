// Env lists as the injection edits them: owned entries overwrite in place, defaulted ones yield to the user.
import type { EnvVar, Volume, VolumeMount } from 'kubernetes-types/core/v1.js';

/** `env` with each of `owned` written over the user's entry of that name (in place), or appended. */
export function overwriteEnv(env: readonly EnvVar[], owned: readonly EnvVar[]): EnvVar[] {
  const byName = new Map(owned.map((e) => [e.name, e]));
  const seen = new Set<string>();
  const out: EnvVar[] = [];
  for (const entry of env) {
    const replacement = byName.get(entry.name);
    if (!replacement) {
      out.push(entry);
      continue;
    }
    // One entry per name: a second user entry would win over ours in the kubelet's last-wins order.
    if (!seen.has(entry.name)) out.push(replacement);
    seen.add(entry.name);
  }
  return [...out, ...owned.filter((e) => !seen.has(e.name))];
}

/** `env` with each of `defaults` appended unless the user already set that name. */
export function defaultEnv(env: readonly EnvVar[], defaults: readonly EnvVar[]): EnvVar[] {
  const present = new Set(env.map((e) => e.name));
  return [...env, ...defaults.filter((e) => !present.has(e.name))];
}

/** `volumes` without any of the same name as `volume`, then `volume`. */
export function replaceVolume(volumes: readonly Volume[], volume: Volume): Volume[] {
  return [...volumes.filter((v) => v.name !== volume.name), volume];
}

/** `mounts` without any sharing `mount`'s name or path, then `mount`. */
export function replaceMount(mounts: readonly VolumeMount[], mount: VolumeMount): VolumeMount[] {
  return [...mounts.filter((m) => m.name !== mount.name && m.mountPath !== mount.mountPath), mount];
}
