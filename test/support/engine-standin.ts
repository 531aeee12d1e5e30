// The engine stand-in (engine-standin/) as a process: started from a container's real argv
// (`vllm serve …` or `python3 -m sglang.launch_server …`) with the Mooncake venv's python3 first on
// PATH, as the engine stand-in image runs it; then /health, /v1/completions and /metrics.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../images/toolchain.ts';
import { type Exit, type ManagedProcess, startProcess } from '../../local/processes.ts';
import { mooncakeVenv } from '../../local/toolchain.ts';
import { type Families, parsePrometheusText } from '../../src/store/prometheus.ts';
import { WaitAborted, waitFor } from './wait.ts';

export const standinDir = join(projectRoot, 'engine-standin');

export interface StandinOptions {
  name: string;
  /** The container's argv, unchanged: `vllm serve <model> …` or `python3 -m sglang.launch_server …`. */
  argv: string[];
  env?: Record<string, string>;
  /** Where the test reaches its HTTP server (the Pod IP and the `--port` it was given). */
  host: string;
  port: number;
  logDir: string;
}

export interface Completion {
  blocks: number;
  hits: number;
  misses: number;
  corrupt: number;
  text: string;
}

/** PATH of an engine container on the local cluster: the launch shims, then the Mooncake venv. */
export function standinPath(): string {
  return [join(standinDir, 'bin'), join(mooncakeVenv(), 'bin'), '/usr/local/bin', '/usr/bin', '/bin'].join(
    ':',
  );
}

function resolveProgram(program: string, path: string): string {
  if (program.includes('/')) return program;
  const dir = path.split(':').find((d) => existsSync(join(d, program)));
  if (!dir) throw new Error(`${program} is not on PATH ${path}`);
  return join(dir, program);
}

export class EngineStandin {
  readonly process: ManagedProcess;
  readonly url: string;

  private constructor(options: StandinOptions) {
    const path = standinPath();
    // Only what a container would have: nothing of the test runner's own environment leaks in.
    const env = { PATH: path, PYTHONPATH: join(standinDir, 'python'), HOME: '/', ...options.env };
    const [program, ...args] = options.argv;
    if (!program) throw new Error('argv is empty');
    this.process = startProcess(options.name, resolveProgram(program, path), {
      logDir: options.logDir,
      args,
      env,
    });
    this.url = `http://${options.host}:${options.port}`;
  }

  /** Starts the process without waiting for it (for runs that are expected to fail). */
  static launch(options: StandinOptions): EngineStandin {
    return new EngineStandin(options);
  }

  /** Starts the process and waits until /health answers 200. */
  static async start(options: StandinOptions, timeoutMs = 60_000): Promise<EngineStandin> {
    const standin = new EngineStandin(options);
    try {
      await standin.waitHealthy(timeoutMs);
      return standin;
    } catch (err) {
      await standin.stop();
      throw err;
    }
  }

  log(): string {
    return existsSync(this.process.logFile) ? readFileSync(this.process.logFile, 'utf8') : '';
  }

  get running(): boolean {
    return this.process.running;
  }

  /** Throws with the tail of the log once the process has exited: waiting longer cannot help. */
  private assertRunning(): void {
    if (!this.process.running) {
      throw new WaitAborted(
        `${this.process.name} exited ${JSON.stringify(this.process.exit)}:\n${this.log().slice(-3000)}`,
      );
    }
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    await this.waitStatus(200, timeoutMs);
  }

  /** Resolves when the process exits on its own, or rejects after `timeoutMs`. */
  async exited(timeoutMs: number): Promise<Exit> {
    return waitFor(() => this.process.exit, { what: `${this.process.name} to exit`, timeoutMs });
  }

  /**
   * One readiness probe as a kubelet makes it: the status, or `undefined` when nothing answered within
   * `timeoutMs` (the client library holds Python's interpreter lock while it sets up, so the HTTP thread
   * cannot answer then).
   */
  async probeHealth(timeoutMs = 1000): Promise<number | undefined> {
    try {
      return (await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(timeoutMs) })).status;
    } catch {
      return undefined;
    }
  }

  /** Waits until /health answers `status`; fails at once, with the log, if the process exits first. */
  async waitStatus(status: number, timeoutMs: number): Promise<number> {
    return waitFor(
      async () => {
        this.assertRunning();
        return (await this.probeHealth()) === status ? status : undefined;
      },
      {
        what: `${this.process.name} /health on ${this.url} to answer ${status} (log: ${this.process.logFile})`,
        timeoutMs,
      },
    );
  }

  async complete(prompt: string, maxTokens = 4): Promise<Completion> {
    const res = await fetch(`${this.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: maxTokens }),
    });
    if (res.status !== 200) throw new Error(`/v1/completions answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as Completion;
  }

  async metrics(): Promise<Families> {
    return parsePrometheusText(await (await fetch(`${this.url}/metrics`)).text());
  }

  /** The sample of `name` whose labels include `labels`; undefined when there is none. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const samples = (await this.metrics()).get(name) ?? [];
    return samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
  }

  async stop(): Promise<Exit> {
    return this.process.stop();
  }
}

/** `vllm serve <model> [flags]`, as a container declares it. */
export function vllmArgv(model: string, flags: string[]): string[] {
  return ['vllm', 'serve', model, ...flags];
}

/** `python3 -m sglang.launch_server [flags]`, as a container declares it. */
export function sglangArgv(flags: string[]): string[] {
  return ['python3', '-m', 'sglang.launch_server', ...flags];
}

export interface InjectedStore {
  /** The pool's client endpoint (host:port of the master's RPC). */
  master: string;
  protocol: string;
  /** The Binding's domain; omitted when the pool reports no ledger. */
  tenant?: string;
}

/** The `kvcache.gpustack.ai/client-config` JSON the injector writes for vLLM (KV-cache spec §6.2). */
export function injectedClientConfig(store: InjectedStore): Record<string, unknown> {
  return {
    metadata_server: 'P2PHANDSHAKE',
    master_server_address: store.master,
    protocol: store.protocol,
    device_name: '',
    mode: 'standalone-store',
    global_segment_size: 0,
    local_buffer_size: 134217728,
    ...(store.tenant === undefined ? {} : { tenant_id: store.tenant }),
  };
}

/** Writes the client config where the downward-API volume would put it; returns the file's path. */
export function writeClientConfig(dir: string, store: InjectedStore): string {
  const file = join(dir, 'mooncake.json');
  writeFileSync(file, JSON.stringify(injectedClientConfig(store)));
  return file;
}

/** The `--kv-transfer-config` the injector appends for a plain vLLM server (no role). */
export const storeTransferConfig = JSON.stringify({
  kv_connector: 'MooncakeStoreConnector',
  kv_role: 'kv_both',
});

/** The environment the injector sets on SGLang (KV-cache spec §6.2); `podIP` stands for the fieldRef. */
export function injectedSglangEnv(store: InjectedStore & { podIP: string }): Record<string, string> {
  return {
    MOONCAKE_MASTER: store.master,
    MOONCAKE_TE_META_DATA_SERVER: 'P2PHANDSHAKE',
    MOONCAKE_PROTOCOL: store.protocol,
    MOONCAKE_DEVICE: '',
    MOONCAKE_GLOBAL_SEGMENT_SIZE: '0',
    MOONCAKE_LOCAL_HOSTNAME: store.podIP,
    ...(store.tenant === undefined ? {} : { MOONCAKE_TENANT_ID: store.tenant }),
    MC_TE_METRIC: '1',
    MC_STORE_CLIENT_METRIC_BANDWIDTH: '1',
  };
}
