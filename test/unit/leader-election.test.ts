// Leader election's timing, stepped on a manual clock against an in-memory Lease API: a free Lease is
// taken at once; a leader renews every retry period; a Lease another holds is taken only once its
// record went unchanged for its duration by the candidate's own clock; a leader whose renewals fail
// stops leading at its renew deadline, counted from its last successful renewal. The retry jitter is
// pinned to its low end, so each moment is checked to the millisecond.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { KubeClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { LeaderElector, type TermEnd } from '../../src/kube/leader-election.ts';
import { LeadershipTerm } from '../../src/kube/leadership-term.ts';
import type { LeaseTimings } from '../../src/kube/lease-timing.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { ManualClock } from '../support/manual-clock.ts';

type Patch = { op: 'test' | 'add'; path: string; value: unknown }[];

/** One Lease behind optimistic concurrency; `fault` makes every call fail at once or hang until abandoned. */
class LeaseApi {
  lease: KubeObject<Lease> | undefined;
  fault: 'refuse' | 'hang' | undefined;
  /** `METHOD@ms` of every call. */
  readonly calls: string[] = [];
  private version = 0;
  private readonly clock: ManualClock;
  constructor(clock: ManualClock) {
    this.clock = clock;
  }

  get client(): KubeClient {
    return { request: this.request.bind(this) } as unknown as KubeClient;
  }

  /** A record another candidate wrote: held by `holder` ('' once released) for `seconds`. */
  heldBy(holder: string, seconds: number, renewTime = '2001-01-01T00:00:00.000000Z') {
    this.store({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'op', namespace: 'ns' },
      spec: { holderIdentity: holder, leaseDurationSeconds: seconds, renewTime, acquireTime: renewTime },
    });
  }

  private store(lease: KubeObject<Lease>): KubeObject<Lease> {
    this.lease = structuredClone({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: `${++this.version}` },
    });
    return structuredClone(this.lease);
  }

  private async request(method: string, _path: string, options: { body?: unknown; signal: AbortSignal }) {
    this.calls.push(`${method}@${this.clock.now()}`);
    if (this.fault === 'refuse') throw new Error('connection refused');
    if (this.fault === 'hang') {
      return new Promise((_, reject) =>
        options.signal.addEventListener('abort', () => reject(options.signal.reason), { once: true }),
      );
    }
    const current = this.lease;
    const body = options.body as KubeObject<Lease>;
    if (method === 'GET') {
      if (!current) throw new ApiError(404, 'NotFound', 'leases "op" not found');
      return structuredClone(current);
    }
    if (method === 'POST') {
      if (current) throw new ApiError(409, 'AlreadyExists', 'leases "op" already exists');
      return this.store(body);
    }
    if (method === 'PUT') {
      if (body.metadata.resourceVersion !== current?.metadata.resourceVersion)
        throw new ApiError(409, 'Conflict', 'the object has been modified');
      return this.store(body);
    }
    const spec = { ...current!.spec } as Record<string, unknown>;
    for (const { op, path, value } of options.body as Patch) {
      const field = path.slice('/spec/'.length);
      if (op === 'test' && spec[field] !== value)
        throw new ApiError(422, 'Invalid', `test of ${path} failed`);
      if (op === 'add') spec[field] = value;
    }
    return this.store({ ...current!, spec });
  }
}

const timings: LeaseTimings = { leaseDurationMs: 8000, renewDeadlineMs: 7000, retryPeriodMs: 1000 };

describe('LeaderElector timing', () => {
  let clock: ManualClock;
  let api: LeaseApi;
  const elector = (over: Partial<LeaseTimings> = {}) =>
    new LeaderElector(api.client, {
      namespace: 'ns',
      name: 'op',
      identity: 'me',
      ...timings,
      ...over,
      clock,
    });
  /** Campaigns in the background; `won` is the time acquire() resolved, once it has. */
  const campaign = (e: LeaderElector) => {
    const state: { won?: number } = {};
    void e.acquire().then((ok) => {
      if (ok) state.won = clock.now();
    });
    return state;
  };
  beforeEach(() => {
    clock = new ManualClock();
    api = new LeaseApi(clock);
    mock.method(Math, 'random', () => 0);
  });
  afterEach(() => mock.restoreAll());

  it('takes a free Lease at once: none yet, or one whose holder released it', async () => {
    assert.equal(await elector().acquire(), true);
    assert.deepEqual(api.calls, ['GET@0', 'POST@0']);
    assert.equal(api.lease?.spec?.holderIdentity, 'me');

    api = new LeaseApi(clock);
    api.heldBy('other', 8);
    const e = elector();
    const run = campaign(e);
    await clock.runTo(500);
    api.heldBy('', 1);
    await clock.runTo(1499);
    assert.equal(run.won, 1000, 'taken at the first attempt after the release, not once it expired');
    await e.release();
  });

  it('renews every retry period while it leads', async () => {
    const e = elector();
    assert.equal(await e.acquire(), true);
    const term = e.lead();
    const patches = () => api.calls.filter((c) => c.startsWith('PATCH'));
    await clock.runTo(0);
    assert.deepEqual(patches(), ['PATCH@0']);
    for (const ms of [1000, 2000, 3000]) {
      await clock.runTo(ms - 1);
      assert.equal(patches().length, ms / 1000, `no renewal before ${ms} ms`);
      await clock.runTo(ms);
      assert.equal(patches().at(-1), `PATCH@${ms}`);
    }
    assert.deepEqual(e.freshness(), { ageMs: 0, remainingMs: 7000, fresh: true });
    await e.release();
    assert.equal(await term, 'stopped');
    assert.equal(api.lease?.spec?.holderIdentity, '', 'released for a standby');
  });

  // Attempts every 1000 ms land on the moment the record expires, every 421 ms on 1 ms before it.
  for (const { retryPeriodMs, lastHeldAt, wonAt } of [
    { retryPeriodMs: 1000, lastHeldAt: 7000, wonAt: 8000 },
    { retryPeriodMs: 421, lastHeldAt: 7999, wonAt: 8420 },
  ]) {
    it(`does not take a Lease another holds before its record went unchanged for 8 s on its own clock (tries every ${retryPeriodMs} ms)`, async () => {
      api.heldBy('other', 8);
      const e = elector({ retryPeriodMs });
      const run = campaign(e);
      await clock.runTo(wonAt - 1);
      assert.equal(run.won, undefined, `still held at ${lastHeldAt} ms`);
      assert.ok(api.calls.includes(`GET@${lastHeldAt}`), `an attempt at ${lastHeldAt} ms`);
      await clock.runTo(wonAt);
      assert.equal(run.won, wonAt);
      assert.equal(api.lease?.spec?.holderIdentity, 'me');
      assert.equal(api.lease?.spec?.leaseTransitions, 1);
      await e.release();
    });
  }

  it('counts the 8 s again from when it saw the holder renew, whatever the renew time says', async () => {
    api.heldBy('other', 8);
    const run = campaign(elector());
    await clock.runTo(2500);
    api.heldBy('other', 8, '2001-01-01T00:00:02.500000Z');
    await clock.runTo(10_999);
    assert.equal(run.won, undefined);
    await clock.runTo(11_000);
    assert.equal(run.won, 11_000, 'the renewal was seen at 3000 ms');
  });

  for (const fault of ['refuse', 'hang'] as const) {
    it(`stops leading 7 s after sending its last successful renewal while renewals ${fault === 'refuse' ? 'fail' : 'hang'}`, async () => {
      const e = elector();
      assert.equal(await e.acquire(), true);
      const term = new LeadershipTerm(clock);
      term.begin(() => e.standDown ?? Number.NEGATIVE_INFINITY);
      let ended: TermEnd | undefined;
      void e.lead().then((why) => {
        ended = why;
      });
      await clock.runTo(2500);
      api.fault = fault;
      const callsBefore = api.calls.length;
      await clock.runTo(8999);
      assert.ok(api.calls.length > callsBefore + 1, 'it kept trying to renew');
      assert.equal(ended, undefined, 'still leading 1 ms before the deadline');
      assert.equal(term.signal.aborted, false, 'writes still start');
      assert.equal(e.freshness()?.remainingMs, 1);
      await clock.runTo(9000);
      assert.equal(ended, 'lost', 'the renewal sent at 2000 ms was the last to succeed');
      assert.ok(term.signal.aborted, 'no write starts past the deadline');
      assert.equal(e.freshness(), undefined);
    });
  }
});
