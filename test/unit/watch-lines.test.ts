// A watch stream's lines decode whole characters whatever the chunking: a condition message's ’ (three
// bytes in UTF-8) split between two chunks reads back as ’, not as replacement characters.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WatchLines } from '../../src/kube/watch-lines.ts';

const event = (message: string) =>
  `${JSON.stringify({
    type: 'MODIFIED',
    object: { metadata: { name: 'team-a' }, status: { conditions: [{ type: 'QuotaGranted', message }] } },
  })}\n`;

/** The stream cut into chunks at `cuts` (byte offsets). */
function chunks(text: string, cuts: number[]): Uint8Array[] {
  const bytes = Buffer.from(text, 'utf8');
  const edges = [0, ...cuts, bytes.length];
  return edges.slice(1).map((end, i) => bytes.subarray(edges[i]!, end));
}

const messageOf = (line: string) => JSON.parse(line).object.status.conditions[0].message as string;

describe('WatchLines', () => {
  const message = 'the master’s ledger grants domain team-a 8Gi — 漢字 and 🙂 too';

  it('decodes a character split at every byte of the event', () => {
    const text = event(message);
    for (let cut = 1; cut < Buffer.byteLength(text); cut++) {
      const lines = new WatchLines();
      const out = chunks(text, [cut]).flatMap((c) => lines.push(c));
      assert.equal(out.length, 1);
      assert.equal(messageOf(out[0]!), message, `cut at byte ${cut}`);
    }
  });

  it('decodes a stream cut into one-byte chunks, and several events in one chunk', () => {
    const text = event(message) + event('second’s') + event('third');
    const lines = new WatchLines();
    const bytes = Buffer.byteLength(text);
    const out = chunks(
      text,
      Array.from({ length: bytes - 1 }, (_, i) => i + 1),
    ).flatMap((c) => lines.push(c));
    assert.deepEqual(out.map(messageOf), [message, 'second’s', 'third']);
    assert.deepEqual(new WatchLines().push(Buffer.from(text)).map(messageOf), [message, 'second’s', 'third']);
  });

  it('keeps an unfinished line for the next chunk, and skips blank lines', () => {
    const lines = new WatchLines();
    assert.deepEqual(lines.push(Buffer.from('{"a":')), []);
    assert.deepEqual(lines.push(Buffer.from('1}\n\n  \n{"b":2}')), ['{"a":1}']);
    assert.deepEqual(lines.push(Buffer.from('\n')), ['{"b":2}']);
  });
});
