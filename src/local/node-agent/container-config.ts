// Everything a container start needs, resolved from the Pod, the image catalog and the cluster's
// objects: the user, the environment, the argv and the bind mounts.
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContainerLaunch } from './container.ts';
import { containerArgv, containerEnv, type EnvSources } from './env.ts';
import { CreateContainerError, ImageMissingError } from './errors.ts';
import type { ImageCatalog } from './images.ts';
import type { Container, Pod } from './pod-types.ts';
import type { PodSandbox } from './sandbox.ts';
import type { PodVolumes } from './volumes.ts';

export interface ContainerConfigContext {
  pod: Pod;
  sandbox: PodSandbox;
  volumes: PodVolumes;
  images: ImageCatalog;
  sources: EnvSources;
  apiServer: { host: string; port: number };
  allocatable: Record<string, string>;
}

/** Variables the kubelet and the runtime give every container before its own. */
function baseEnv(ctx: ContainerConfigContext, path: string[], imageEnv: Record<string, string>, uid: number) {
  const { host, port } = ctx.apiServer;
  return {
    PATH: path.join(':'),
    HOME: uid === 0 ? '/root' : '/',
    ...imageEnv,
    HOSTNAME: ctx.sandbox.hostname,
    KUBERNETES_SERVICE_HOST: host,
    KUBERNETES_SERVICE_PORT: String(port),
    KUBERNETES_SERVICE_PORT_HTTPS: String(port),
    KUBERNETES_PORT: `tcp://${host}:${port}`,
    // Pods here share one network namespace: a server that binds every address would take its port on
    // every Pod. Local programs (the engine stand-in) bind this address instead; real Pods have their own.
    KVPOOL_LOCAL_POD_IP: ctx.sandbox.podIP ?? '',
  };
}

/** An empty directory (emptied if it exists) with `mode`. */
function freshDir(path: string, mode: number): string {
  rmSync(path, { recursive: true, force: true });
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
  return path;
}

export function containerLaunch(ctx: ContainerConfigContext, container: Container): ContainerLaunch {
  const { pod, sandbox } = ctx;
  const image = ctx.images.resolve(container.image ?? '');
  if (!image) throw new ImageMissingError(ctx.images.missingMessage(container.image ?? ''));
  const podSecurity = pod.spec.securityContext ?? {};
  const own = container.securityContext ?? {};
  const uid = own.runAsUser ?? podSecurity.runAsUser ?? image.spec.user.uid;
  const gid = own.runAsGroup ?? podSecurity.runAsGroup ?? image.spec.user.gid;
  const groups = [
    ...(podSecurity.fsGroup !== undefined ? [podSecurity.fsGroup] : []),
    ...(podSecurity.supplementalGroups ?? []),
  ];
  const env = containerEnv({
    pod,
    container,
    addresses: { podIP: sandbox.podIP!, hostIP: sandbox.hostIP },
    sources: ctx.sources,
    base: baseEnv(ctx, image.spec.path, image.spec.env ?? {}, uid),
    allocatable: ctx.allocatable,
  });
  const argv = containerArgv(container, image.spec, env);
  if (!argv.length) throw new CreateContainerError(`no command specified for container ${container.name}`);
  const dir = join(sandbox.dir, 'containers', container.name);
  mkdirSync(join(dir, 'rootfs'), { recursive: true });
  const terminationLog = join(dir, 'termination-log');
  if (!existsSync(terminationLog)) writeFileSync(terminationLog, '', { mode: 0o666 });
  const mounts = [
    { source: sandbox.hostsFile, target: '/etc/hosts', readOnly: false },
    {
      source: terminationLog,
      target: container.terminationMessagePath ?? '/dev/termination-log',
      readOnly: false,
    },
    ...ctx.volumes.mountsFor(pod, container, env),
  ];
  return {
    env,
    imageID: image.imageID,
    spec: {
      hostname: sandbox.hostname,
      mounts,
      exposed: image.spec.hostPaths ?? [],
      uid,
      gid,
      groups,
      workingDir: container.workingDir ?? image.spec.workingDir ?? '/',
      argv,
      root: join(dir, 'rootfs'),
      tmp: freshDir(join(dir, 'tmp'), 0o1777),
      launchedMarker: join(dir, 'launched'),
    },
  };
}
