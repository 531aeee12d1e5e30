// Events through the real apiserver: a repeat folds into the first Event's count, and a repeat after the
// first Event expired (deleted, as the apiserver's event TTL deletes it) is recorded as a new Event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { EventRecorder } from '../../src/kube/events.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';

const ns = 'events-test';
type Event = KubeObject & { count?: number; reason?: string; message?: string };

describe('recorded events', () => {
  let client: KubeClient;
  let subject: KubeObject;
  const eventsAbout = async (name: string) =>
    (
      await client.list<Event>(
        { apiVersion: 'v1', kind: 'Event', namespace: ns },
        { fieldSelector: `involvedObject.name=${name}` },
      )
    ).items;

  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
    subject = await client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: uniqueName('subject'), namespace: ns },
    } as KubeObject);
  });
  after(() => client?.close());

  it('folds a repeat into the count, and records a repeat after the Event expired anew', async () => {
    const recorder = new EventRecorder(client, 'kvpool-test');
    const record = () => recorder.record(subject, 'Warning', 'RenderFailed', 'role server: the image’s tag');
    await record();
    await record();
    const [first, ...none] = await eventsAbout(subject.metadata.name!);
    assert.equal(none.length, 0);
    assert.equal(first?.count, 2);
    assert.equal(first?.message, 'role server: the image’s tag');
    await client.delete({ apiVersion: 'v1', kind: 'Event', namespace: ns, name: first!.metadata.name! });
    await record();
    const [again, ...more] = await eventsAbout(subject.metadata.name!);
    assert.equal(more.length, 0);
    assert.ok(again, 'the repeat after expiry is recorded');
    assert.notEqual(again.metadata.name, first!.metadata.name);
    assert.equal(again.count, 1);
    await record();
    assert.equal((await eventsAbout(subject.metadata.name!))[0]?.count, 2, 'and folds repeats again');
  });
});
