// What the operator reads from a Mooncake master: Prometheus text, /health and /get_segments_detail,
// checked against replies recorded from a Mooncake 0.3.13.post1 master.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  capacityFrom,
  ListingTooLarge,
  parseHealth,
  parseSegments,
  segmentListingCap,
} from '../../src/store/observe.ts';
import { byLabel, gauge, parsePrometheusText } from '../../src/store/prometheus.ts';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/store/${name}`, import.meta.url), 'utf8');

const twoMembers = fixture('metrics-two-members-tenant.txt');

describe('parsePrometheusText on a recorded master', () => {
  it('reads capacity and use of two mounted members', () => {
    const f = parsePrometheusText(twoMembers);
    assert.equal(gauge(f, 'master_total_capacity_bytes'), 134217728);
    assert.equal(gauge(f, 'master_allocated_bytes'), 12);
    assert.equal(gauge(f, 'master_put_end_requests_total'), 1);
  });

  it('reads zero capacity when no member has mounted', () => {
    const f = parsePrometheusText(fixture('metrics-no-members.txt'));
    assert.equal(gauge(f, 'master_total_capacity_bytes'), 0);
    assert.equal(gauge(f, 'master_put_end_requests_total'), 0);
  });

  it('reads the labelled tenant series by tenant', () => {
    const f = parsePrometheusText(twoMembers);
    const read = (name: string) => byLabel(f, name, 'tenant_id').get('team-a');
    assert.equal(read('mooncake_tenant_quota_requested_bytes'), 33554432);
    assert.equal(read('mooncake_tenant_quota_effective_bytes'), 33554432);
    assert.equal(read('mooncake_tenant_quota_charged_bytes'), 12);
  });

  it('reads per-segment series keyed by segment', () => {
    const f = parsePrometheusText(twoMembers);
    const used = byLabel(f, 'segment_allocated_bytes', 'segment');
    assert.deepEqual([...used].sort(), [
      ['127.0.0.2:12990', 12],
      ['127.0.0.3:14300', 0],
    ]);
  });

  it('has no tenant families on a master without tenancy', () => {
    const f = parsePrometheusText(fixture('metrics-no-tenancy.txt'));
    assert.equal(f.has('mooncake_tenant_quota_requested_bytes'), false);
    assert.equal(byLabel(f, 'mooncake_tenant_quota_requested_bytes', 'tenant_id').size, 0);
    assert.equal(gauge(f, 'master_total_capacity_bytes'), 0);
  });

  it('skips every comment line', () => {
    const f = parsePrometheusText(twoMembers);
    for (const name of f.keys()) assert.doesNotMatch(name, /^#/);
    const text = '# HELP x_total things\n# TYPE x_total counter\n\n#x_total 99\nx_total 3\n';
    assert.deepEqual([...parsePrometheusText(text)], [['x_total', [{ labels: {}, value: 3, text: '3' }]]]);
  });
});

describe('parsePrometheusText on written samples', () => {
  it('unescapes quotes, backslashes and newlines in label values', () => {
    const f = parsePrometheusText(
      [
        'm{path="C:\\\\tmp",note="say \\"hi\\", then go",multi="a\\nb"} 1',
        'm{path="plain", note="a } brace"} 2',
      ].join('\n'),
    );
    const [first, second] = f.get('m')!;
    assert.deepEqual(first!.labels, { path: 'C:\\tmp', note: 'say "hi", then go', multi: 'a\nb' });
    assert.deepEqual(second!.labels, { path: 'plain', note: 'a } brace' });
    assert.equal(byLabel(f, 'm', 'note').get('say "hi", then go'), 1);
  });

  it('reads +Inf, -Inf, NaN, exponents and a trailing timestamp', () => {
    const f = parsePrometheusText(
      ['h_bucket{le="+Inf"} +Inf', 'low -Inf', 'ratio NaN', 'big 1.5e+09', 'stamped 7 1700000000000'].join(
        '\n',
      ),
    );
    assert.equal(byLabel(f, 'h_bucket', 'le').get('+Inf'), Number.POSITIVE_INFINITY);
    assert.equal(gauge(f, 'low'), Number.NEGATIVE_INFINITY);
    assert.ok(Number.isNaN(gauge(f, 'ratio')));
    assert.equal(gauge(f, 'big'), 1500000000);
    assert.equal(gauge(f, 'stamped'), 7);
  });

  it('gauge ignores labelled samples; an absent family is undefined, not zero', () => {
    const f = parsePrometheusText('only_labelled{a="1"} 5\n');
    assert.equal(gauge(f, 'only_labelled'), undefined);
    assert.equal(gauge(f, 'never_reported'), undefined);
    assert.equal(byLabel(f, 'only_labelled', 'other').size, 0);
  });
});

describe('capacityFrom', () => {
  it('reports memory capacity and use of two members', () => {
    assert.deepEqual(capacityFrom(parsePrometheusText(twoMembers), false), {
      total: 134217728n,
      used: 12n,
    });
  });

  it('adds the file tier when asked, and only then', () => {
    const text = twoMembers
      .replace(/^master_total_file_capacity_bytes 0$/m, 'master_total_file_capacity_bytes 1073741824')
      .replace(/^master_allocated_file_size_bytes 0$/m, 'master_allocated_file_size_bytes 4096');
    const f = parsePrometheusText(text);
    assert.deepEqual(capacityFrom(f, true), { total: 134217728n + 1073741824n, used: 12n + 4096n });
    assert.deepEqual(capacityFrom(f, false), { total: 134217728n, used: 12n });
  });

  it('is undefined when a memory family is missing: absent is not zero', () => {
    const noTotal = twoMembers.replace(/^master_total_capacity_bytes .*$/m, '');
    const noUsed = twoMembers.replace(/^master_allocated_bytes .*$/m, '');
    assert.equal(capacityFrom(parsePrometheusText(noTotal), false), undefined);
    assert.equal(capacityFrom(parsePrometheusText(noUsed), true), undefined);
    assert.equal(capacityFrom(parsePrometheusText(''), false), undefined);
  });

  it('saturates at the largest int64', () => {
    const f = parsePrometheusText(
      'master_total_capacity_bytes 9e18\nmaster_allocated_bytes 0\nmaster_total_file_capacity_bytes 9e18\nmaster_allocated_file_size_bytes 0\n',
    );
    assert.equal(capacityFrom(f, true)?.total, (1n << 63n) - 1n);
  });
});

describe('parseHealth', () => {
  it('reads the verdict, role and HA state of a serving leader', () => {
    assert.deepEqual(parseHealth(fixture('health-serving.json')), {
      serviceReady: true,
      role: 'leader',
      haState: 'serving',
    });
  });

  it('reads service_ready false as not serving', () => {
    assert.equal(parseHealth('{"status":"ok","service_ready":false}').serviceReady, false);
  });

  it('refuses a reply without a service_ready verdict, whatever status says', () => {
    assert.throws(() => parseHealth('{"status":"ok","role":"leader"}'), /no service_ready verdict/);
    assert.throws(() => parseHealth('{"status":"ok","service_ready":"true"}'), /no service_ready/);
  });
});

describe('parseSegments', () => {
  it('maps the recorded listing of two members', () => {
    const segments = parseSegments(fixture('segments-two-members.json'));
    assert.equal(segments.length, 2);
    assert.deepEqual(segments[0], {
      segmentId: '6651381758049616625-9141558920858561675',
      clientId: '1388843159798281400-5054134275546608774',
      segmentName: '127.0.0.2:12990',
      teEndpoint: '127.0.0.2:16966',
      protocol: 'tcp',
      status: 'OK',
      usedBytes: 12,
      capacityBytes: 67108864,
    });
    assert.equal(segments[1]!.teEndpoint, '127.0.0.3:15053');
    assert.equal(segments[1]!.usedBytes, 0);
  });

  it('leaves fields the master did not send absent', () => {
    const [s] = parseSegments('{"segments":[{"segment_id":"x","allocator_used_bytes":"12"}]}');
    assert.deepEqual(s, {
      segmentId: 'x',
      clientId: undefined,
      segmentName: undefined,
      teEndpoint: undefined,
      protocol: undefined,
      status: undefined,
      usedBytes: undefined,
      capacityBytes: undefined,
    });
  });

  it('refuses a reply without a segments field', () => {
    assert.throws(() => parseSegments('{"total_segments":0}'), /no segments field/);
    assert.throws(() => parseSegments('{"segments":{}}'), /no segments field/);
  });

  it('accepts an empty listing', () => {
    assert.deepEqual(parseSegments('{"total_segments":0,"segments":[]}'), []);
  });

  it(`reads ${segmentListingCap} entries and refuses one more, naming the count`, () => {
    const listing = (n: number) =>
      JSON.stringify({ segments: Array.from({ length: n }, (_, i) => ({ segment_id: `s${i}` })) });
    assert.equal(parseSegments(listing(segmentListingCap)).length, segmentListingCap);
    assert.throws(
      () => parseSegments(listing(segmentListingCap + 1)),
      (err: unknown) =>
        err instanceof ListingTooLarge && err.name === 'ListingTooLarge' && /5001 segments/.test(err.message),
    );
  });
});

describe('the recorded tenant quota reply', () => {
  it('agrees with the tenant series on /metrics', () => {
    const reply = JSON.parse(fixture('tenant-quotas.json')) as {
      data: { tenant_id: string; effective_quota_bytes: number; charged_bytes: number }[];
    };
    const f = parsePrometheusText(twoMembers);
    for (const t of reply.data) {
      assert.equal(
        byLabel(f, 'mooncake_tenant_quota_effective_bytes', 'tenant_id').get(t.tenant_id),
        t.effective_quota_bytes,
      );
      assert.equal(
        byLabel(f, 'mooncake_tenant_quota_charged_bytes', 'tenant_id').get(t.tenant_id),
        t.charged_bytes,
      );
    }
  });
});
