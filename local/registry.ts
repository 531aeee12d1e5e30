// The local cluster's image registry: the CNCF Distribution registry (built by scripts/build-node.sh),
// serving plain HTTP on this machine's address on the cluster's network. Nodes pull from it (their
// containerd's registry host configuration, nodes/node-config.ts); `skopeo` pushes to it through the
// cluster's bin/skopeo, which tells it the registry speaks plain HTTP.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { waitFor } from '../src/kube/wait-for.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess } from './processes.ts';
import { registryBinary } from './toolchain.ts';

/** The registry's configuration file (Distribution's format), as a pure function of where it serves. */
export function registryConfig(address: string, storage: string): string {
  return stringify({
    version: 0.1,
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: storage }, delete: { enabled: true } },
    http: { addr: address },
  });
}

/** The `registries.conf` that lets skopeo use a plain-HTTP registry. */
export function registriesConf(address: string): string {
  return `[[registry]]\nlocation = "${address}"\ninsecure = true\n`;
}

export class LocalRegistry {
  /** host:port, as image references name it. */
  readonly address: string;
  /** A registries.conf for skopeo (`--registries-conf`): this registry speaks plain HTTP. */
  readonly registriesConfPath: string;
  private readonly process: ManagedProcess;

  private constructor(address: string, registriesConfPath: string, process: ManagedProcess) {
    this.address = address;
    this.registriesConfPath = registriesConfPath;
    this.process = process;
  }

  /** Starts an empty registry on `host` (its storage under `dir`); resolves once it answers /v2/. */
  static async start(host: string, dir: string, logDir: string): Promise<LocalRegistry> {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, 'storage'), { recursive: true });
    const address = `${host}:${await freePort(host)}`;
    const config = join(dir, 'config.yml');
    writeFileSync(config, registryConfig(address, join(dir, 'storage')));
    const registriesConfPath = join(dir, 'registries.conf');
    writeFileSync(registriesConfPath, registriesConf(address));
    const process = startProcess('registry', registryBinary(), {
      args: ['serve', config],
      // No tracing collector runs here: without this the registry retries one for ever.
      env: { ...globalThis.process.env, OTEL_TRACES_EXPORTER: 'none' },
      logDir,
    });
    const registry = new LocalRegistry(address, registriesConfPath, process);
    try {
      await waitFor(
        async () => {
          process.assertRunning();
          return (await fetch(`http://${address}/v2/`)).ok ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200, what: `the registry to answer at http://${address}/v2/` },
      );
    } catch (err) {
      await registry.stop();
      throw err;
    }
    return registry;
  }

  /**
   * Writes `path`, a `skopeo` that runs the machine's with this registry's registries.conf, so the
   * documented `skopeo copy … docker://<registry>/…` needs no TLS flag. Set-up installs skopeo.
   */
  writeSkopeo(path: string): void {
    const own = dirname(path);
    const skopeo = (globalThis.process.env.PATH ?? '')
      .split(delimiter)
      .filter((d) => d && d !== own)
      .map((d) => join(d, 'skopeo'))
      .find((p) => existsSync(p));
    const body = skopeo
      ? `exec ${skopeo} --registries-conf ${this.registriesConfPath} "$@"`
      : 'echo "skopeo is not installed: run `npm run setup` (its Debian packages step installs it)" >&2; exit 1';
    rmSync(path, { force: true });
    writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }
}
