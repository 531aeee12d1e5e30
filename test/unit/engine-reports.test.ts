// What the operator reads from an engine replica's /metrics: the families real vLLM (MooncakeStoreConnector)
// and SGLang (HiCache on Mooncake) export, in their exact text (fixtures/engines/, written in
// prometheus_client's format: `# HELP`/`# TYPE`, `_total` counters, `_created` gauges, names with `:`).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { replicaReportOf, sumReports } from '../../src/store/replica-reports.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`./fixtures/engines/${name}`, import.meta.url), 'utf8');
const reportOf = (text: string) => replicaReportOf(parsePrometheusText(text));

describe('the Prometheus text of an engine', () => {
  it('keeps names with a colon, and the _created gauges apart from the counters', () => {
    const f = parsePrometheusText(fixture('vllm-0.32-mooncake-store.txt'));
    const put = f
      .get('vllm:mooncake_store_operation_keys_total')
      ?.find((s) => s.labels.operation === 'save_put' && s.labels.status === 'ok');
    assert.deepEqual(put?.labels, {
      model_name: 'Qwen/Qwen2.5-7B-Instruct',
      engine: '0',
      operation: 'save_put',
      status: 'ok',
    });
    assert.equal(put?.value, 8);
    assert.equal(f.get('vllm:mooncake_store_operation_keys_created')?.length, 6);
    assert.equal(f.get('vllm:mooncake_store_operation_time_seconds_bucket')?.length, 6 * 17);
  });
});

describe('replicaReportOf', () => {
  it('reads vLLM 0.32: keys stored and read less their failed keys, failed keys, operations, external prefix tokens', () => {
    assert.deepEqual(reportOf(fixture('vllm-0.32-mooncake-store.txt')), {
      // save_put: 8 (ok) + 4 - 1 failed (partial_failure); load_get: 4 (ok), the error operation reads none.
      storedKeys: 11,
      loadedKeys: 4,
      // 1 failed key of the partial put, and the 2 keys of the get that raised.
      failedKeys: 3,
      operations: 10,
      // The external (pool) counters, not the engine's own prefix cache (vllm:prefix_cache_*).
      prefixQueriedTokens: 1536,
      prefixHitTokens: 768,
    });
  });

  it('counts every key of an operation that raised as failed, even when no failed key was recorded', () => {
    const text = [
      'vllm:mooncake_store_operation_keys_total{model_name="m",engine="0",operation="save_put",status="error"} 6.0',
      'vllm:mooncake_store_operation_failed_keys_total{model_name="m",engine="0",operation="save_put",status="error"} 0.0',
      'vllm:mooncake_store_operation_total{model_name="m",engine="0",operation="save_put",status="error"} 1.0',
    ].join('\n');
    assert.deepEqual(reportOf(text), { storedKeys: 0, loadedKeys: 0, failedKeys: 6, operations: 1 });
  });

  it('reads SGLang 0.5.23 HiCache storage tokens from one rank (every rank counts the same tokens)', () => {
    assert.deepEqual(reportOf(fixture('sglang-0.5.23-hicache-mooncake.txt')), {
      storedTokens: 3072,
      loadedTokens: 1024,
      prefixHitTokens: 1024,
    });
  });

  it('reports nothing for a replica that exports none of these families (absent, not zero)', () => {
    const text = [
      '# HELP vllm:mooncake_store_operation_total Number of Mooncake store communication operations.',
      '# TYPE vllm:mooncake_store_operation_total counter',
      'vllm:num_requests_running{model_name="m",engine="0"} 0.0',
    ].join('\n');
    assert.deepEqual(reportOf(text), {});
  });

  it('reads a fresh vLLM replica: its prefix counters at 0, no store operation yet', () => {
    const text = [
      'vllm:external_prefix_cache_queries_total{model_name="m",engine="0"} 0.0',
      'vllm:external_prefix_cache_hits_total{model_name="m",engine="0"} 0.0',
    ].join('\n');
    assert.deepEqual(reportOf(text), { prefixQueriedTokens: 0, prefixHitTokens: 0 });
  });

  it('adds replicas field by field, a field none carries staying absent', () => {
    assert.deepEqual(sumReports([{ storedKeys: 2, prefixHitTokens: 16 }, { storedKeys: 3 }, {}]), {
      storedKeys: 5,
      prefixHitTokens: 16,
    });
  });
});

describe('src/', () => {
  it('reads no family of the project’s own engine stand-in (kvpool_standin_*), only what real engines export', () => {
    const root = join(projectRoot, 'src');
    const found = readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => readFileSync(join(root, f), 'utf8').includes('kvpool_standin_'));
    assert.deepEqual(found, []);
  });
});
