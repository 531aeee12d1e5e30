// A replica writes the webhook certificate Secret and the CA bundle only while it leads: a refresh
// that waited behind another is judged as leader or not when it runs, not when it was asked for.
import assert from 'node:assert/strict';
import { afterEach, describe, it, mock } from 'node:test';
import type { WebhookCertificates } from '../../src/kube/webhook-certs.ts';
import type { WebhookServer } from '../../src/kube/webhook-server.ts';
import { WebhookServing } from '../../src/kube/webhook-serving.ts';

const pair = { certPem: 'cert', keyPem: 'key' };

/** Certificates whose leader step (ensure, which may write) can be held open, counting both steps. */
function fakeCertificates() {
  const calls = { ensure: 0, load: 0 };
  let release = () => {};
  let hold = false;
  const certificates = {
    serving: pair,
    caBundle: 'ca',
    async ensure() {
      calls.ensure += 1;
      if (hold) await new Promise<void>((resolve) => (release = resolve));
      return false;
    },
    async load() {
      calls.load += 1;
      return false;
    },
  };
  return {
    calls,
    certificates: certificates as unknown as WebhookCertificates,
    holdNextEnsure: () => {
      hold = true;
    },
    releaseEnsure: () => {
      hold = false;
      release();
    },
  };
}

const server = {
  start: async () => 9443,
  updateCertificate: () => {},
  stop: async () => {},
} as unknown as WebhookServer;

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('WebhookServing', () => {
  afterEach(() => mock.timers.reset());

  it('does not write as leader in a timer refresh that ran after the Lease was lost', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const fake = fakeCertificates();
    const serving = new WebhookServing({ server, certificates: fake.certificates, port: 0, refreshMs: 1000 });
    let leading = true;
    fake.holdNextEnsure();
    const first = serving.refresh(() => leading);
    await settle();
    serving.startTimer(() => leading);
    mock.timers.tick(1000); // the timer's refresh queues behind the one still writing
    await settle();
    leading = false; // the Lease is lost while it waits
    fake.releaseEnsure();
    await first;
    await settle();
    assert.equal(fake.calls.ensure, 1, 'only the refresh that ran while leading took the leader step');
    assert.equal(fake.calls.load, 1, 'the queued refresh only read the Secret');
    await serving.stop();
  });

  it('once a refresh outside the timer serves a certificate, the timer waits refreshMs, not its one-second retry', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const fake = fakeCertificates();
    // No certificate until the leader step issues one, as on a fresh install.
    const certificates = fake.certificates as unknown as { serving: unknown; ensure: () => Promise<boolean> };
    certificates.serving = undefined;
    const ensure = certificates.ensure.bind(certificates);
    certificates.ensure = async () => {
      certificates.serving = pair;
      return ensure();
    };
    const serving = new WebhookServing({
      server,
      certificates: fake.certificates,
      port: 0,
      refreshMs: 3_600_000,
    });
    let leading = false;
    serving.startTimer(() => leading);
    mock.timers.tick(1000); // a standby's retry: nothing to serve yet, so another in a second
    await settle();
    assert.equal(fake.calls.load, 1);
    leading = true;
    await serving.refresh(() => leading); // the election's own refresh issues and serves the pair
    assert.equal(fake.calls.ensure, 1);
    mock.timers.tick(1000);
    await settle();
    assert.deepEqual(
      fake.calls,
      { ensure: 1, load: 1 },
      'no refresh a second later: the next is refreshMs away',
    );
    mock.timers.tick(3_600_000);
    await settle();
    assert.equal(fake.calls.ensure, 2, 'the hourly refresh still runs');
    await serving.stop();
  });

  it('takes the leader step again once the replica leads', async () => {
    const fake = fakeCertificates();
    const serving = new WebhookServing({ server, certificates: fake.certificates, port: 0 });
    let leading = false;
    await serving.refresh(() => leading);
    leading = true;
    await serving.refresh(() => leading);
    assert.deepEqual(fake.calls, { ensure: 1, load: 1 });
    await serving.stop();
  });

  it('serves the certificate written to the Secret even when a later step of that pass failed', async () => {
    const renewed = { certPem: 'renewed cert', keyPem: 'renewed key' };
    let fail = false;
    const certificates = {
      serving: pair,
      caBundle: 'ca',
      // As ensure does: the Secret is written and the pair taken, then a CA bundle patch is refused.
      async ensure() {
        if (!fail) return false;
        fail = false;
        certificates.serving = renewed;
        throw new Error('the CA bundle patch was refused');
      },
      async load() {
        return false;
      },
    };
    const updates: { certPem: string }[] = [];
    const recording = { ...server, updateCertificate: (c: { certPem: string }) => updates.push(c) };
    const serving = new WebhookServing({
      server: recording as unknown as WebhookServer,
      certificates: certificates as unknown as WebhookCertificates,
      port: 0,
    });
    await serving.refresh(() => true);
    fail = true;
    await assert.rejects(
      serving.refresh(() => true),
      /refused/,
    );
    await serving.refresh(() => true); // ensure reports no change: the pair it holds is already the new one
    assert.deepEqual(updates.at(-1), renewed, 'the webhook server serves the pair in the Secret');
    await serving.stop();
  });
});
