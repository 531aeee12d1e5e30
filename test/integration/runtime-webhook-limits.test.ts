// The webhook server answers whatever reaches it: a review past its size limit, a body that is not
// JSON, a review missing the parts a handler reads, and a client that goes away mid-body each get a
// clear answer (or none, for the client that left), and the server keeps serving. The requests are
// sent by the test: an apiserver never sends such reviews, which is why the server must not trust them.

import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../local/ports.ts';
import { createCertificateAuthority, loadCertificateAuthority } from '../../src/kube/pki.ts';
import { formatQuantity } from '../../src/kube/readable-quantity.ts';
import { allow, WebhookServer } from '../../src/kube/webhook-server.ts';

const limit = 64 << 10;

interface Answer {
  status: number;
  body: string;
}

describe('the webhook server with reviews no apiserver sends', () => {
  const server = new WebhookServer({ maxReviewBytes: limit });
  let port: number;
  const judged: string[] = [];

  /** POSTs `chunks` one by one; without a length the body goes chunked. */
  const post = (chunks: (string | Buffer)[], headers: Record<string, string | number> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/review', method: 'POST', rejectUnauthorized: false, headers },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      for (const c of chunks) req.write(c);
      req.end();
    });
  const reviewOf = (request: unknown) =>
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
  const podCreate = (extra: Record<string, unknown> = {}) => ({
    uid: 'u-1',
    operation: 'CREATE',
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, ...extra },
  });
  const answersNormally = async () => {
    const ok = await post([reviewOf(podCreate())]);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(JSON.parse(ok.body).response.allowed, true);
  };

  before(async () => {
    server.handle('/review', (req) => {
      judged.push(req.uid);
      return allow();
    });
    const ca = await createCertificateAuthority('limits');
    const cert = await loadCertificateAuthority(ca).issue({
      commonName: '127.0.0.1',
      hosts: ['127.0.0.1'],
      usage: 'server',
      validDays: 1,
    });
    port = await server.start(cert, await freePort(), '127.0.0.1');
  });
  after(() => server.stop());

  it('refuses a review past its limit, declared or streamed, without judging it', async () => {
    const padded = reviewOf(podCreate({ data: { pad: 'x'.repeat(limit) } }));
    const declared = await post([padded], { 'content-length': Buffer.byteLength(padded) });
    assert.equal(declared.status, 413);
    assert.equal(
      declared.body,
      `the AdmissionReview is larger than the webhook reads (${formatQuantity(limit)}); nothing was admitted`,
    );
    const half = padded.length >> 1;
    const streamed = await post([padded.slice(0, half), padded.slice(half)]);
    assert.equal(streamed.status, 413, streamed.body);
    assert.deepEqual(judged, []);
    await answersNormally();
  });

  it('says a body is not JSON, or not an AdmissionReview', async () => {
    const garbage = await post(['{"request": {"uid": ']);
    assert.equal(garbage.status, 400);
    assert.match(garbage.body, /^the request body is not JSON: /);
    for (const body of ['null', '[]', '{"request": {}}']) {
      const answer = await post([body]);
      assert.equal(answer.status, 400, body);
      assert.equal(answer.body, 'not an AdmissionReview v1 request: request.uid is missing');
    }
  });

  it('refuses a review missing what a handler reads, naming the part', async () => {
    const noObject = await post([reviewOf({ uid: 'u-2', operation: 'CREATE' })]);
    assert.equal(noObject.status, 200);
    const { response } = JSON.parse(noObject.body);
    assert.equal(response.allowed, false);
    assert.equal(
      response.status.message,
      'the AdmissionReview carries no request.object to judge; nothing was admitted',
    );
    const noOld = await post([reviewOf({ ...podCreate(), uid: 'u-3', operation: 'UPDATE' })]);
    assert.match(JSON.parse(noOld.body).response.status.message, /no request\.oldObject/);
    assert.ok(!judged.includes('u-2') && !judged.includes('u-3'));
  });

  it('keeps serving after a client goes away in the middle of a body', async () => {
    await new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port,
        path: '/review',
        method: 'POST',
        rejectUnauthorized: false,
        headers: { 'content-length': 1000 },
      });
      req.on('error', () => resolve());
      req.write('{"request":', () => setTimeout(() => req.destroy(), 50));
      req.on('close', () => resolve());
    });
    await answersNormally();
  });
});
