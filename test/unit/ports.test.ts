import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePort } from '../../local/ports.ts';

describe('freePort', () => {
  it('hands out distinct ports below the kernel’s ephemeral range, each one listenable', async () => {
    const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    assert.equal(new Set(ports).size, 50);
    for (const port of ports) assert.ok(port < Number(ephemeralLow), `${port} is in the ephemeral range`);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '0.0.0.0', resolve);
    });
    await new Promise((r) => server.close(r));
  });
});
