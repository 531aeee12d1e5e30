// A leadership term's signal gates every write: the API client's and the store client's writes are
// refused before they are sent while no term runs, and a write in flight is cancelled the moment the
// term ends; reads pass either way. The peer is a loopback HTTP server that records what reaches it.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.ts';
import { LeadershipTerm, NotLeading } from '../../src/kube/leadership-term.ts';
import { closeServer, listen } from '../../src/kube/listen.ts';
import { StoreAdminClient } from '../../src/store/admin-client.ts';

const received: string[] = [];
const closed: string[] = [];
/** Requests to /hold are answered never: they end when their sender gives up. */
const server = createServer((req: IncomingMessage, res) => {
  received.push(`${req.method} ${req.url}`);
  if (req.url?.startsWith('/hold')) {
    res.once('close', () => closed.push(`${req.method} ${req.url}`));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
});
let address = '';

before(async () => {
  address = `127.0.0.1:${await listen(server, 0, '127.0.0.1')}`;
});
after(async () => {
  server.closeAllConnections();
  await closeServer(server);
});

async function kubeClient(term: LeadershipTerm): Promise<KubeClient> {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://${address}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return (await KubeClient.fromKubeConfig(kc)).with({ writeSignal: () => term.signal });
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check());
};

test('a term’s signal aborts when it ends, naming why; before any term and past its deadline no write may start', () => {
  const term = new LeadershipTerm();
  assert.ok(term.signal.aborted, 'no term has begun');
  term.begin();
  const signal = term.signal;
  assert.equal(signal.aborted, false);
  term.end('the operator Lease ended (taken)');
  assert.ok(signal.aborted, 'the signal writes in flight hold is aborted');
  assert.ok(signal.reason instanceof NotLeading);
  assert.equal(signal.reason.message, 'not leading: the operator Lease ended (taken)');

  let deadline = performance.now() - 1;
  term.begin(() => deadline);
  assert.ok(term.signal.aborted, 'a write starting past the deadline is refused');
  deadline = performance.now() + 60_000;
  assert.equal(term.signal.aborted, false, 'a renewal that moved the deadline lets writes start again');
});

test('the API client sends no write outside a term, cancels one in flight when it ends, and reads', async () => {
  const term = new LeadershipTerm();
  const client = await kubeClient(term);
  try {
    await assert.rejects(client.request('PATCH', '/write-before'), NotLeading);
    await client.request('GET', '/read-before');
    term.begin();
    const inFlight = client.request('PUT', '/hold-api');
    await until(() => received.includes('PUT /hold-api'));
    term.end('the operator Lease ended (lost)');
    await assert.rejects(inFlight, /not leading: the operator Lease ended \(lost\)/);
    await until(() => closed.includes('PUT /hold-api'));
    await client.request('GET', '/read-after');
    assert.ok(!received.includes('PATCH /write-before'), 'the refused write never left');
    assert.ok(received.includes('GET /read-before') && received.includes('GET /read-after'));
  } finally {
    await client.close();
  }
});

test('the store client sends no ledger write outside a term, cancels one in flight when it ends, and reads', async () => {
  const term = new LeadershipTerm();
  const store = new StoreAdminClient(address, 5000, { writeSignal: () => term.signal });
  await assert.rejects(store.call('DELETE', '/ledger-before'), NotLeading);
  term.begin();
  const inFlight = store.call('PUT', '/hold-store', '{}');
  await until(() => received.includes('PUT /hold-store'));
  term.end('the operator Lease ended (taken)');
  await assert.rejects(inFlight, NotLeading);
  await until(() => closed.includes('PUT /hold-store'));
  assert.equal((await store.call('GET', '/ledger-read')).status, 200);
  assert.ok(!received.includes('DELETE /ledger-before'));
});
