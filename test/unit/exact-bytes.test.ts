// Byte counts stay exact at any size (a JavaScript number rounds above 2^53): what the master reports
// in /metrics and in its ledger, what the operator writes to it, and what the seed policy carries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePolicy, renderPolicy } from '../../src/controllers/pool/seed-policy.ts';
import { capacityFrom } from '../../src/store/observe.ts';
import { exactInteger, gaugeBytes, parsePrometheusText } from '../../src/store/prometheus.ts';
import { parseExactJson } from '../../src/store/tenant-ledger.ts';
import { allocatableBytes, tenantFigures } from '../../src/store/tenant-metrics.ts';

const above = 9007199254740993n; // 2^53 + 1: the smallest integer a number cannot hold
const max = (1n << 63n) - 1n;

describe('exactInteger', () => {
  it('reads integers of any size exactly, and exponent or fraction forms as whole bytes', () => {
    assert.equal(exactInteger('9007199254740993'), above);
    assert.equal(exactInteger('9223372036854775807'), max);
    assert.equal(exactInteger('9.007199254740993e15'), above);
    assert.equal(exactInteger('1e3'), 1000n);
    assert.equal(exactInteger('12.9'), 12n);
    assert.equal(exactInteger('-4'), -4n);
    assert.equal(exactInteger('0'), 0n);
  });

  it('reads no number from +Inf, NaN or text', () => {
    for (const t of ['+Inf', '-Inf', 'NaN', 'x', '']) assert.equal(exactInteger(t), undefined, t);
  });
});

describe('figures the master reports', () => {
  it('keeps tenant figures and allocatable capacity exact above 2^53', () => {
    const f = parsePrometheusText(
      [
        `mooncake_tenant_quota_requested_bytes{tenant_id="big"} ${above}`,
        `mooncake_tenant_quota_effective_bytes{tenant_id="big"} ${above - 2n}`,
        `mooncake_tenant_quota_charged_bytes{tenant_id="big"} ${max}`,
        `mooncake_tenant_quota_allocatable_capacity_bytes ${above + 2n}`,
        '',
      ].join('\n'),
    );
    const big = tenantFigures(f).get('big')!;
    assert.equal(big.requestedBytes, above);
    assert.equal(big.effectiveBytes, above - 2n);
    assert.equal(big.usageBytes, max);
    assert.equal(allocatableBytes(f), above + 2n);
  });

  it('keeps capacity exact above 2^53', () => {
    const f = parsePrometheusText(
      `master_total_capacity_bytes ${above}\nmaster_allocated_bytes ${above - 8n}\n`,
    );
    assert.deepEqual(capacityFrom(f, false), { total: above, used: above - 8n });
    assert.equal(gaugeBytes(f, 'master_total_capacity_bytes'), above);
  });

  it('reads the ledger listing’s integers exactly, and small ones as numbers', () => {
    const reply = parseExactJson(
      `{"success":true,"data":[{"tenant_id":"big","requested_quota_bytes":${above},"effective_quota_bytes":67108864,"over_quota":false}]}`,
    ) as { data: Record<string, unknown>[] };
    assert.equal(reply.data[0]!.requested_quota_bytes, above);
    assert.equal(reply.data[0]!.effective_quota_bytes, 67108864);
  });
});

describe('the seed policy', () => {
  it('writes and reads back a quota above 2^53 exactly', () => {
    const text = renderPolicy(new Map([['big', above]]));
    assert.match(text, new RegExp(`quota: ${above}\\n`));
    assert.equal(parsePolicy(text).get('big'), above);
  });
});
