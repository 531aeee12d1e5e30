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
import { ManualClock } from '../support/manual-clock.ts';

const received: string[] = [];
const closed: string[] = [];
/** Called on every entry the server records. */
const recorded: (() => void)[] = [];
const record = (list: string[], entry: string) => {
  list.push(entry);
  for (const wake of recorded.splice(0)) wake();
};
/** Requests to /hold are answered never: they end when their sender gives up. */
const server = createServer((req: IncomingMessage, res) => {
  record(received, `${req.method} ${req.url}`);
  if (req.url?.startsWith('/hold')) {
    res.once('close', () => record(closed, `${req.method} ${req.url}`));
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

/** Resolves once the server has recorded what `check` looks for. */
const until = async (check: () => boolean) => {
  while (!check()) await new Promise<void>((wake) => recorded.push(wake));
};

test('a term’s signal aborts when it ends, naming why; before any term and past its deadline no write may start', () => {
  const clock = new ManualClock();
  const term = new LeadershipTerm(clock);
  assert.ok(term.signal.aborted, 'no term has begun');
  term.begin();
  const signal = term.signal;
  assert.equal(signal.aborted, false);
  term.end('the operator Lease ended (taken)');
  assert.ok(signal.aborted, 'the signal writes in flight hold is aborted');
  assert.ok(signal.reason instanceof NotLeading);
  assert.equal(signal.reason.message, 'not leading: the operator Lease ended (taken)');

  let deadline = 100;
  term.begin(() => deadline);
  clock.advance(99);
  assert.equal(term.signal.aborted, false, 'a write may start 1 ms before the deadline');
  clock.advance(1);
  assert.ok(term.signal.aborted, 'a write starting at the deadline is refused');
  deadline = 60_100;
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
