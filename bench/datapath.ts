// `npm run bench -- datapath`: what the injected client configuration costs an engine's puts and gets.
// A vLLM Pod is injected by the operator's webhook on a real apiserver; its argv, environment and
// client-config file then drive the engine stand-in's own configuration reader and store client
// against a real master and members. The same store is driven by a Mooncake client set up by hand,
// and the machine's memory-copy bandwidth is measured as the limit, all in one run (rounds alternate
// the two clients).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlPlane } from '../local/control-plane.ts';
import { installCrds } from '../local/install-crds.ts';
import { mooncakeBinary } from '../local/toolchain.ts';
import { clientConfigAnnotation } from '../src/inject/types.ts';
import { KubeClient, type KubeObject } from '../src/kube/client.ts';
import { binding, externalBackend, pool } from '../test/builders/index.ts';
import { MooncakeStore } from '../test/support/mooncake-store.ts';
import { startOperatorInProcess } from '../test/support/operator.ts';
import { untilBinding } from '../test/support/pool-waits.ts';
import { median, percentile, round, writeResult } from './results.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const MiB = 1 << 20;
// The stand-in's block for block size 16 in bfloat16 (16 x 4 layers x 2 heads x 64 x K,V x 2 bytes),
// and a block of an 8B-class model (16 tokens x 32 layers x 8 heads x 128 x K,V x 2 bytes).
const sizes = [32 * 1024, 2 * MiB];
const counts: Record<string, number> = { [32 * 1024]: 1000, [2 * MiB]: 100 };
const team = 'team-a';

type Pod = KubeObject & {
  spec: { containers: { command?: string[]; args?: string[]; env?: { name: string; value?: string }[] }[] };
};
interface ClientRun {
  setup: Record<string, unknown>;
  sizes: Record<string, { putSeconds: number[]; getSeconds: number[] }>;
}

const dir = mkdtempSync(join(tmpdir(), 'kvpool-bench-datapath-'));
const python = mooncakeBinary('python');
const script = join(import.meta.dirname, 'datapath_client.py');

/** Runs one client; its JSON is the last line it prints (the library logs on the same streams). */
function runClient(mode: string, spec: object, env: Record<string, string>): unknown {
  const file = join(dir, `${mode}-spec.json`);
  writeFileSync(file, JSON.stringify(spec));
  const run = spawnSync(python, [script, mode, file], {
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: dir, ...env },
    maxBuffer: 64 << 20,
  });
  if (run.status !== 0) {
    const said = run.stderr.toString().trim().split('\n').slice(-5).join('\n');
    throw new Error(`the ${mode} client exited with ${run.status}:\n${said}`);
  }
  const out = run.stdout.toString();
  return JSON.parse(
    out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .at(-1)!,
  );
}

/** The Pod as the webhook injected it, on a real apiserver with the operator serving admission. */
async function injectedPod(store: MooncakeStore): Promise<Pod> {
  const cp = await ControlPlane.start();
  const admin = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
  try {
    await installCrds(admin);
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: team } } as KubeObject);
    const operator = await startOperatorInProcess(cp.kubeconfigPath, { webhooks: true });
    try {
      await admin.create(externalBackend('mooncake-dram', store));
      await admin.create(pool('shared-dram', { backend: 'mooncake-dram', total: '2Gi' }));
      await admin.create(
        binding(team, 'cache', { pool: 'shared-dram', ceiling: '1536Mi', domain: 'team-a-cache' }),
      );
      await untilBinding(admin, team, 'cache', 'Ready', (b) => b.status?.phase === 'Ready', 60_000);
      return await admin.create<Pod>({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'engine',
          namespace: team,
          labels: { 'kvcache.gpustack.ai/inject': 'true' },
          annotations: { 'kvcache.gpustack.ai/binding': 'cache', 'kvcache.gpustack.ai/engine': 'vLLM' },
        },
        spec: {
          containers: [
            {
              name: 'engine',
              image: 'gpustack/runner:cuda13.0-vllm0.29.0',
              command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
            },
          ],
        },
      } as unknown as Pod);
    } finally {
      await operator.stop();
    }
  } finally {
    await admin.close();
    await cp.stop();
  }
}

const store = await MooncakeStore.start({ members: 2, memberBytes: 1024 * MiB, tenants: [] });
try {
  const pod = await injectedPod(store);
  const container = pod.spec.containers[0]!;
  // The downward-API file the kubelet would project from the Pod's annotation.
  const configFile = join(dir, 'mooncake.json');
  const clientConfig = pod.metadata.annotations![clientConfigAnnotation]!;
  writeFileSync(configFile, clientConfig);
  const injectedEnv: Record<string, string> = {};
  for (const e of container.env ?? []) if (e.value !== undefined) injectedEnv[e.name] = e.value;
  injectedEnv.MOONCAKE_CONFIG_PATH = configFile;
  const argv = [...(container.command ?? []), ...(container.args ?? [])];
  const config = JSON.parse(clientConfig) as Record<string, unknown>;
  // By hand, as the library's own example sets a client up: the same master, transport and tenant,
  // no segment of its own (the members hold the data), and a larger transfer buffer.
  const rawSetup = {
    local_hostname: '127.0.0.1',
    metadata_server: 'P2PHANDSHAKE',
    global_segment_size: 0,
    local_buffer_size: 512 * MiB,
    protocol: 'tcp',
    device_name: '',
    master_server_address: store.rpcAddress,
    tenant_id: config.tenant_id,
  };
  const spec = (tag: string) => ({ tag, sizes, counts, argv, env: injectedEnv, raw: rawSetup });

  const memcpyBefore = runClient('memcpy', { memcpyBytes: 256 * MiB, memcpyRepeats: 5 }, {}) as {
    memcpy: { bytes: number; seconds: number[] };
  };
  const runs: Record<'raw' | 'injected', ClientRun[]> = { raw: [], injected: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (['raw', 'injected'] as const) : (['injected', 'raw'] as const);
    for (const mode of order) {
      runs[mode].push(
        runClient(mode, spec(`${mode}-${r}`), mode === 'injected' ? injectedEnv : {}) as ClientRun,
      );
      // Objects just read are leased and may refuse removal: empty the store so no round evicts another's.
      await fetch(`${store.adminUrl}/api/v1/remove_all`, { method: 'POST' });
      console.log(`round ${r + 1}: ${mode} done`);
    }
  }
  const memcpyAfter = runClient('memcpy', { memcpyBytes: 256 * MiB, memcpyRepeats: 5 }, {}) as {
    memcpy: { bytes: number; seconds: number[] };
  };
  const memcpyGBps = median(
    [...memcpyBefore.memcpy.seconds, ...memcpyAfter.memcpy.seconds].map((s) => (256 * MiB) / s / 1e9),
  );

  const summarize = (mode: 'raw' | 'injected', size: number) => {
    const per = runs[mode].map((run) => run.sizes[String(size)]!);
    const mbps = (secs: number[]) => (size * secs.length) / secs.reduce((a, b) => a + b, 0) / 1e6;
    const ms = (pick: (x: (typeof per)[0]) => number[]) => per.flatMap(pick).map((s) => s * 1000);
    return {
      putMBps: round(median(per.map((x) => mbps(x.putSeconds))), 1),
      getMBps: round(median(per.map((x) => mbps(x.getSeconds))), 1),
      putMs: {
        p50: round(median(ms((x) => x.putSeconds)), 3),
        p99: round(
          percentile(
            ms((x) => x.putSeconds),
            99,
          ),
          3,
        ),
      },
      getMs: {
        p50: round(median(ms((x) => x.getSeconds)), 3),
        p99: round(
          percentile(
            ms((x) => x.getSeconds),
            99,
          ),
          3,
        ),
      },
    };
  };
  // Each round ran both clients back to back: the median of the rounds' ratios, so a change of load
  // between rounds cancels out.
  type SizeRun = ClientRun['sizes'][string];
  const roundRatio = (size: number, pick: (x: SizeRun) => number[]) => {
    const total = (run: ClientRun) => pick(run.sizes[String(size)]!).reduce((a, b) => a + b, 0);
    return round(median(runs.raw.map((r, i) => total(r) / total(runs.injected[i]!))), 2);
  };
  const bySize = Object.fromEntries(
    sizes.map((size) => {
      const raw = summarize('raw', size);
      const injected = summarize('injected', size);
      return [
        `${size / 1024}KiB`,
        {
          objects: counts[String(size)],
          raw,
          injected,
          ratios: {
            putInjectedOverRaw: roundRatio(size, (x) => x.putSeconds),
            getInjectedOverRaw: roundRatio(size, (x) => x.getSeconds),
            putRawOverMemcpy: round(raw.putMBps / 1000 / memcpyGBps, 4),
            getRawOverMemcpy: round(raw.getMBps / 1000 / memcpyGBps, 4),
          },
        },
      ];
    }),
  );
  const ratios = Object.values(bySize).flatMap((s) => [
    s.ratios.putInjectedOverRaw!,
    s.ratios.getInjectedOverRaw!,
  ]);
  const result = {
    setup: `a real multi-tenant mooncake_master and 2 members x 1Gi on loopback (tcp); one client process at a time, sequential puts then gets of each size; ${rounds} rounds alternating which client goes first`,
    injected: {
      how: "the argv, environment and client-config file the webhook injected into a vLLM Pod on a real apiserver, read by the engine stand-in's parse_server_args and vllm_store_settings, every call through its StoreClient",
      argv,
      env: Object.keys(injectedEnv),
      clientConfig: config,
      setup: runs.injected[0]!.setup,
    },
    raw: { how: 'MooncakeDistributedStore.setup() by hand, put/get called directly', setup: rawSetup },
    memcpyGBps: round(memcpyGBps, 2),
    bySize,
    target: { injectedOverRaw: 0.95 },
    met: { injectedOverRaw: ratios.every((r) => r >= 0.95) },
    notes:
      "MB/s: bytes moved over the sum of per-call times, median over rounds; injected over raw: the median of each round's ratio (both clients ran back to back in a round); latency percentiles over every call of every round. memcpyGBps: ctypes.memmove of 256 MiB buffers (median of 10), the machine's memory-copy bandwidth; rawOverMemcpy says how far the store's path (a copy into the client buffer, TCP over loopback, the member's copy) is from it.",
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`wrote ${writeResult('datapath', result)}`);
} finally {
  await store.stop();
  rmSync(dir, { recursive: true, force: true });
}
