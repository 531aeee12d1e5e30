// The engine stand-in, configured exactly as the operator injects vLLM and SGLang containers, against a
// real multi-tenant Mooncake master: replicas share KV blocks through the store, prefixes are reused,
// an unknown tenant's writes fail visibly, and a replica without a connector never touches the store.
// Its /metrics carries what real engines export (vLLM's vllm:mooncake_store_* and external prefix-cache
// counters, SGLang's HiCache storage tokens), read here as the operator reads them.
// Each replica binds its own 127.x Pod IP, as Pods sharing a host network do.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../local/ports.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { replicaReportOf } from '../../src/store/replica-reports.ts';
import { tenantFigures } from '../../src/store/tenant-metrics.ts';
import {
  EngineStandin,
  type InjectedStore,
  injectedSglangEnv,
  type StandinOptions,
  sglangArgv,
  storeTransferConfig,
  vllmArgv,
  writeClientConfig,
} from '../support/engine-standin.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';

const MiB = 1 << 20;
const blockSize = 16;
// 16 tokens × 4 layers × 2 KV heads × 64 head dim × (K and V) × 2 bytes of bfloat16.
const blockBytes = 32768;
const model = '/models/Qwen/Qwen3-0.6B';
const servedName = 'qwen3-0.6b';

/** `count` whitespace-separated words `<tag>-<i>`: one token each. */
function words(tag: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${tag}-${i}`);
}

// Four full blocks and a partial one, which is never cached.
const prompt = words('shared', 4 * blockSize + 5).join(' ');

let store: MooncakeStore;
const logDir = mkdtempSync(join(tmpdir(), 'kvpool-engine-standin-'));
const standins: EngineStandin[] = [];
let lastPod = 0;

interface Pod {
  name: string;
  ip: string;
  port: number;
  dir: string;
}

/** A Pod address in the store's own loopback block, so parallel test files never share one. */
async function newPod(name: string): Promise<Pod> {
  lastPod += 1;
  const block = store.members[0]!.host.split('.').slice(0, 2).join('.');
  const ip = `${block}.200.${lastPod}`;
  const dir = join(logDir, name);
  mkdirSync(dir);
  return { name, ip, port: await freePort(ip), dir };
}

function options(pod: Pod, argv: string[], env: Record<string, string>): StandinOptions {
  return { name: pod.name, argv, env: { POD_IP: pod.ip, ...env }, host: pod.ip, port: pod.port, logDir };
}

async function startStandin(pod: Pod, argv: string[], env: Record<string, string>): Promise<EngineStandin> {
  const standin = await EngineStandin.start(options(pod, argv, env));
  standins.push(standin);
  return standin;
}

/** A vLLM Pod after injection: the file vehicle, the connector flag, the dtype flag. */
async function startVllm(name: string, injected: InjectedStore, dtype = 'bfloat16'): Promise<EngineStandin> {
  const pod = await newPod(name);
  const configPath = writeClientConfig(pod.dir, injected);
  const flags = ['--served-model-name', servedName, '--host', '0.0.0.0', '--port', String(pod.port)];
  return startStandin(
    pod,
    vllmArgv(model, [
      ...flags,
      '--kv-transfer-config',
      storeTransferConfig,
      '--kv-cache-dtype',
      dtype,
      '--block-size',
      String(blockSize),
    ]),
    { MOONCAKE_CONFIG_PATH: configPath, MC_TE_METRIC: '1', MC_STORE_CLIENT_METRIC_BANDWIDTH: '1' },
  );
}

/** An SGLang Pod after injection: the environment vehicle and the HiCache flags. */
async function startSglang(name: string, injected: InjectedStore): Promise<EngineStandin> {
  const pod = await newPod(name);
  return startStandin(
    pod,
    sglangArgv([
      '--model-path',
      model,
      '--served-model-name',
      servedName,
      '--host',
      '0.0.0.0',
      '--port',
      String(pod.port),
      '--page-size',
      String(blockSize),
      '--hicache-storage-backend',
      'mooncake',
      '--enable-hierarchical-cache',
      '--kv-cache-dtype',
      'bfloat16',
      '--enable-metrics',
    ]),
    injectedSglangEnv({ ...injected, podIP: pod.ip }),
  );
}

async function tenantUsage(tenant: string): Promise<bigint> {
  return tenantFigures(parsePrometheusText(await store.metrics())).get(tenant)?.usageBytes ?? 0n;
}

/** The sum of a family's samples whose labels include `labels`; undefined when there is none. */
async function total(
  standin: EngineStandin,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const samples = ((await standin.metrics()).get(name) ?? []).filter((s) =>
    Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return samples.length ? samples.reduce((a, s) => a + s.value, 0) : undefined;
}

/** vLLM's keys of one store operation with one outcome (ok, partial_failure, error). */
const keys = (standin: EngineStandin, operation: string, status?: string) =>
  total(standin, 'vllm:mooncake_store_operation_keys_total', { operation, ...(status ? { status } : {}) });

/** What the operator reads from this replica's /metrics. */
async function reported(standin: EngineStandin) {
  return replicaReportOf(await standin.metrics());
}

/** The first JSON log line whose message is `msg`. */
function logged(standin: EngineStandin, msg: string | RegExp): Record<string, unknown> | undefined {
  return standin
    .log()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((r) => (typeof msg === 'string' ? r.msg === msg : msg.test(String(r.msg))));
}

/** Whether the process has the Mooncake client library mapped at all. */
function loadsMooncakeClient(standin: EngineStandin): boolean {
  return readFileSync(`/proc/${standin.process.pid}/maps`, 'utf8').includes('/mooncake/store.');
}

describe('engine stand-in against a real multi-tenant Mooncake master', () => {
  before(async () => {
    store = await MooncakeStore.start({
      members: 2,
      memberBytes: 64 * MiB,
      tenants: [{ name: 'team-a', quota: 64 * MiB }],
    });
  });
  after(async () => {
    for (const s of standins.reverse()) await s.stop();
    await store?.stop();
    rmSync(logDir, { recursive: true, force: true });
  });

  describe('two vLLM replicas configured as the operator injects them', () => {
    let first: EngineStandin;
    let second: EngineStandin;
    before(async () => {
      const injected = { master: store.rpcAddress, protocol: 'tcp', tenant: 'team-a' };
      first = await startVllm('vllm-a', injected);
      second = await startVllm('vllm-b', injected);
    });

    it('the second replica loads every block the first one computed and wrote', async () => {
      const usageBefore = await tenantUsage('team-a');
      const written = await first.complete(prompt);
      assert.deepEqual(
        { blocks: written.blocks, hits: written.hits, misses: written.misses },
        { blocks: 4, hits: 0, misses: 4 },
      );
      assert.equal(await keys(first, 'save_put', 'ok'), 4);
      assert.equal(
        await total(first, 'vllm:mooncake_store_operation_bytes_total', { operation: 'save_put' }),
        4 * blockBytes,
      );
      assert.deepEqual(await reported(first), {
        storedKeys: 4,
        loadedKeys: 0,
        failedKeys: 0,
        operations: 2,
        prefixQueriedTokens: 4 * blockSize + 5,
        prefixHitTokens: 0,
      });
      assert.ok(loadsMooncakeClient(first), 'a replica with the connector runs the Mooncake client');
      const usageAfter = await tenantUsage('team-a');
      assert.ok(
        usageAfter - usageBefore >= BigInt(4 * blockBytes),
        `team-a is charged for 4 blocks of ${blockBytes} bytes: ${usageBefore} → ${usageAfter}`,
      );

      const loaded = await second.complete(prompt);
      assert.deepEqual(
        { blocks: loaded.blocks, hits: loaded.hits, misses: loaded.misses, corrupt: loaded.corrupt },
        { blocks: 4, hits: 4, misses: 0, corrupt: 0 },
      );
      assert.equal(await keys(second, 'load_get', 'ok'), 4);
      assert.equal(await keys(second, 'save_put'), undefined, 'nothing is written twice');
      assert.deepEqual(await reported(second), {
        storedKeys: 0,
        loadedKeys: 4,
        failedKeys: 0,
        operations: 2,
        prefixQueriedTokens: 4 * blockSize + 5,
        prefixHitTokens: 4 * blockSize,
      });
      assert.equal(
        await total(second, 'vllm:prompt_tokens_by_source_total', { source: 'external_kv_transfer' }),
        4 * blockSize,
      );
    });

    it('a prompt sharing only a prefix hits only the prefix blocks', async () => {
      const branched = [...prompt.split(' ').slice(0, 2 * blockSize), ...words('branch', 2 * blockSize)].join(
        ' ',
      );
      const partial = await second.complete(branched);
      assert.deepEqual({ hits: partial.hits, misses: partial.misses }, { hits: 2, misses: 2 });
      const whole = await first.complete(branched);
      assert.deepEqual(
        { hits: whole.hits, misses: whole.misses },
        { hits: 4, misses: 0 },
        'the blocks the second replica computed reach the first',
      );
    });

    it('a replica with another KV dtype finds the keys but refuses their bytes as corrupt', async () => {
      // Engines leave the KV dtype out of the key, so only the contents tell the replicas apart.
      const fp8 = await startVllm(
        'vllm-fp8',
        { master: store.rpcAddress, protocol: 'tcp', tenant: 'team-a' },
        'fp8_e4m3',
      );
      const result = await fp8.complete(prompt);
      assert.deepEqual(
        { hits: result.hits, corrupt: result.corrupt, misses: result.misses },
        { hits: 0, corrupt: 1, misses: 3 },
        'the first mismatched block ends the loaded prefix; the rest are recomputed',
      );
      assert.equal(logged(fp8, /serving as a stand-in/)?.block_bytes, blockBytes / 2);
      // The engine cannot tell: it loaded a key (the wrong bytes), and served no token from the pool.
      assert.equal(await keys(fp8, 'load_get', 'ok'), 1);
      assert.equal(await total(fp8, 'vllm:external_prefix_cache_hits_total'), 0);
    });
  });

  describe('two SGLang replicas configured through the environment', () => {
    let first: EngineStandin;
    let second: EngineStandin;
    before(async () => {
      // The master by name, resolved through /etc/hosts as a Service name would be.
      const injected = {
        master: `localhost:${store.rpcAddress.split(':')[1]}`,
        protocol: 'tcp',
        tenant: 'team-a',
      };
      first = await startSglang('sglang-a', injected);
      second = await startSglang('sglang-b', injected);
    });

    it('the second replica hits the blocks the first wrote, under SGLang’s own keys', async () => {
      const written = await first.complete(prompt);
      assert.deepEqual(
        { blocks: written.blocks, hits: written.hits, misses: written.misses },
        { blocks: 4, hits: 0, misses: 4 },
        'the same prompt vLLM cached misses: the engines key blocks differently',
      );
      assert.equal(
        await total(first, 'sglang:backuped_tokens_total', { storage_backend: 'mooncake' }),
        4 * blockSize,
      );
      const loaded = await second.complete(prompt);
      assert.deepEqual(
        { hits: loaded.hits, misses: loaded.misses, corrupt: loaded.corrupt },
        {
          hits: 4,
          misses: 0,
          corrupt: 0,
        },
      );
      assert.deepEqual(await reported(second), {
        storedTokens: 0,
        loadedTokens: 4 * blockSize,
        prefixHitTokens: 4 * blockSize,
      });
      assert.equal(await total(second, 'vllm:mooncake_store_operation_total'), undefined);
    });
  });

  describe('a replica injected with a tenant the master does not know', () => {
    let standin: EngineStandin;
    before(async () => {
      standin = await startVllm('vllm-unknown-tenant', {
        master: store.rpcAddress,
        protocol: 'tcp',
        tenant: 'team-x',
      });
    });

    it('serves, but every put fails and is counted as a failure', async () => {
      const usageBefore = await tenantUsage('team-a');
      const first = await standin.complete(prompt);
      const again = await standin.complete(prompt);
      assert.deepEqual([first.misses, again.misses], [4, 4], 'nothing was stored, so nothing is ever hit');
      assert.equal(await keys(standin, 'save_put', 'partial_failure'), 8);
      assert.equal(await keys(standin, 'save_put', 'ok'), undefined);
      assert.equal(
        await total(standin, 'vllm:mooncake_store_operation_failed_keys_total', { operation: 'save_put' }),
        8,
      );
      const r = await reported(standin);
      assert.equal(r.storedKeys, 0);
      assert.ok((r.failedKeys ?? 0) >= 8, `what turns CacheAttached False: ${r.failedKeys} failed keys`);
      assert.equal(logged(standin, 'connecting to the Mooncake store')?.tenant, 'team-x');
      assert.equal(await tenantUsage('team-a'), usageBefore, 'no other tenant is charged');
    });
  });

  describe('replicas without a connector', () => {
    const masterCounters = [
      'master_put_start_requests_total',
      'master_exist_key_requests_total',
      'master_get_replica_list_requests_total',
    ];
    async function counters(): Promise<number[]> {
      const families = parsePrometheusText(await store.metrics());
      return masterCounters.map((name) => families.get(name)?.[0]?.value ?? Number.NaN);
    }

    it('serve and recompute every prompt without touching the store', async () => {
      const vllmPod = await newPod('vllm-no-connector');
      // The config file is present, but without --kv-transfer-config vLLM never reads it.
      const configPath = writeClientConfig(vllmPod.dir, {
        master: store.rpcAddress,
        protocol: 'tcp',
        tenant: 'team-a',
      });
      const vllm = await startStandin(
        vllmPod,
        vllmArgv(model, [
          '--host',
          '0.0.0.0',
          '--port',
          String(vllmPod.port),
          '--block-size',
          String(blockSize),
        ]),
        { MOONCAKE_CONFIG_PATH: configPath },
      );
      const sglangPod = await newPod('sglang-no-connector');
      // The Mooncake environment is present, but without --hicache-storage-backend SGLang ignores it.
      const sglang = await startStandin(
        sglangPod,
        sglangArgv([
          '--model-path',
          model,
          '--host',
          sglangPod.ip,
          '--port',
          String(sglangPod.port),
          '--page-size',
          '16',
        ]),
        injectedSglangEnv({
          master: store.rpcAddress,
          protocol: 'tcp',
          tenant: 'team-a',
          podIP: sglangPod.ip,
        }),
      );
      const before = await counters();
      for (const standin of [vllm, sglang]) {
        for (let i = 0; i < 2; i++) {
          const result = await standin.complete(prompt);
          assert.deepEqual(
            { blocks: result.blocks, hits: result.hits, misses: result.misses },
            {
              blocks: 4,
              hits: 0,
              misses: 4,
            },
          );
        }
        assert.ok(logged(standin, /^no Mooncake store configured/), 'no connector');
        assert.deepEqual(
          await standin.metrics().then(replicaReportOf, () => ({})),
          {},
          'no store operation and no prefix lookup reported',
        );
        assert.equal(loadsMooncakeClient(standin), false, 'the Mooncake client library is never loaded');
      }
      assert.deepEqual(await counters(), before, 'the master saw no request');
    });
  });

  describe('arguments and configuration a real engine refuses', () => {
    it('exits 2 on a --kv-cache-dtype spelling the engine rejects', async () => {
      const cases = [
        {
          name: 'sglang-fp8',
          argv: (p: Pod) =>
            sglangArgv(['--model-path', model, '--port', String(p.port), '--kv-cache-dtype', 'fp8']),
        },
        {
          name: 'vllm-bf16',
          argv: (p: Pod) => vllmArgv(model, ['--port', String(p.port), '--kv-cache-dtype', 'bf16']),
        },
      ];
      for (const c of cases) {
        const pod = await newPod(c.name);
        const standin = EngineStandin.launch(options(pod, c.argv(pod), {}));
        standins.push(standin);
        const exit = await standin.exited(30_000);
        assert.equal(exit.code, 2, `${c.name}: ${standin.log()}`);
        assert.match(standin.log(), /argument --kv-cache-dtype: invalid choice/);
      }
    });

    it('is never ready while the store setup fails, then exits 1 naming the failed setup', async () => {
      const pod = await newPod('vllm-setup-fails');
      // A transport the client library cannot run: setup retries for ~20 s, then fails. The library holds
      // the interpreter lock meanwhile, so a probe gets 503 (before setup starts) or no answer at all.
      const configPath = writeClientConfig(pod.dir, {
        master: store.rpcAddress,
        protocol: 'nvlink',
        tenant: 'team-a',
      });
      const argv = vllmArgv(model, [
        '--host',
        pod.ip,
        '--port',
        String(pod.port),
        '--kv-transfer-config',
        storeTransferConfig,
      ]);
      const standin = EngineStandin.launch(options(pod, argv, { MOONCAKE_CONFIG_PATH: configPath }));
      standins.push(standin);
      const seen = new Set<string>();
      let probesWhileConnecting = 0;
      const deadline = Date.now() + 120_000;
      while (standin.running && Date.now() < deadline) {
        const connecting = standin.log().includes('connecting to the Mooncake store');
        const status = await standin.probeHealth(1000);
        if (!standin.running) break;
        seen.add(String(status ?? 'no answer'));
        if (connecting) probesWhileConnecting += 1;
        await sleep(250);
      }
      assert.ok(probesWhileConnecting > 0, `no probe landed while connecting: ${standin.log().slice(-2000)}`);
      assert.deepEqual(
        [...seen].filter((s) => s !== '503' && s !== 'no answer'),
        [],
        `/health answered ${[...seen].join(', ')}`,
      );
      const exit = await standin.exited(120_000);
      assert.equal(exit.code, 1);
      assert.match(
        standin.log(),
        /Mooncake setup failed with rc=-?\d+ \(master [^,]+, tenant team-a, protocol nvlink/,
      );
    });
  });
});
