// Image references: what a node could pull is admitted, with its parts; anything else says which part is wrong.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { imageReferenceRefusal, parseImageReference } from '../../src/webhooks/image-reference.ts';

const sha256 = 'a'.repeat(64);

function reasonFor(s: string): string {
  const parsed = parseImageReference(s);
  assert.equal(parsed.ok, false, `${s} should be refused`);
  return parsed.ok ? '' : parsed.reason;
}

describe('parseImageReference', () => {
  it('accepts a bare name', () => {
    assert.deepEqual(parseImageReference('mooncake'), { ok: true, reference: { path: 'mooncake' } });
  });

  it('splits registry with port, path and tag', () => {
    assert.deepEqual(parseImageReference('registry:5000/ns/name:tag'), {
      ok: true,
      reference: { domain: 'registry:5000', path: 'ns/name', tag: 'tag' },
    });
  });

  it('accepts a digest, alone or after a tag', () => {
    assert.deepEqual(parseImageReference(`name@sha256:${sha256}`), {
      ok: true,
      reference: { path: 'name', digest: `sha256:${sha256}` },
    });
    assert.deepEqual(parseImageReference(`gpustack/mirrored-mooncake:0.3.13.post1-cpu@sha256:${sha256}`), {
      ok: true,
      reference: { path: 'gpustack/mirrored-mooncake', tag: '0.3.13.post1-cpu', digest: `sha256:${sha256}` },
    });
  });

  it('treats a first component as a registry only when it looks like a host', () => {
    const cases: Array<[string, string | undefined, string]> = [
      ['localhost/store', 'localhost', 'store'],
      ['Registry.Example.com/store', 'Registry.Example.com', 'store'],
      ['[::1]:5000/store', '[::1]:5000', 'store'],
      ['gpustack/mirrored-mooncake', undefined, 'gpustack/mirrored-mooncake'],
    ];
    for (const [s, domain, path] of cases) {
      const parsed = parseImageReference(s);
      assert.ok(parsed.ok, s);
      assert.equal(parsed.reference.domain, domain, s);
      assert.equal(parsed.reference.path, path, s);
    }
  });

  it('accepts the separators the grammar allows', () => {
    for (const s of ['a__b/c-d', 'a--b.c_d', 'x/y/z:V1_2.3-rc']) assert.ok(parseImageReference(s).ok, s);
  });

  it('refuses upper-case repository paths', () => {
    assert.match(reasonFor('Mooncake'), /must be lowercase/);
    assert.match(reasonFor('gpustack/Mooncake:1'), /must be lowercase/);
    assert.match(reasonFor('Library/nginx'), /must be lowercase/);
  });

  it('refuses whitespace and empty input', () => {
    assert.match(reasonFor(''), /empty/);
    assert.match(reasonFor('moon cake'), /whitespace/);
    assert.match(reasonFor(' mooncake'), /whitespace/);
    assert.match(reasonFor('mooncake\t'), /whitespace/);
  });

  it('refuses empty parts', () => {
    for (const s of ['a//b', '/a', 'a/', ':tag', `@sha256:${sha256}`]) assert.match(reasonFor(s), /empty/, s);
    assert.match(reasonFor('name:'), /tag ""/);
  });

  it('refuses bad tags', () => {
    assert.match(reasonFor('name:-rc'), /tag "-rc"/);
    assert.match(reasonFor('name:.rc'), /tag ".rc"/);
    assert.match(reasonFor('name:a+b'), /tag "a\+b"/);
    assert.ok(parseImageReference(`name:${'a'.repeat(128)}`).ok);
    assert.match(reasonFor(`name:${'a'.repeat(129)}`), /tag/);
  });

  it('refuses bad path components and registries', () => {
    for (const s of ['a..b', 'a-', '-a', 'a___b', 'a/b$']) assert.match(reasonFor(s), /path component/, s);
    assert.match(reasonFor('bad_host.io/x'), /registry "bad_host.io"/);
    assert.match(reasonFor('host.io:port/x'), /registry/);
  });

  it('refuses bad digests', () => {
    assert.match(reasonFor('name@sha256:abc'), /exactly 64 lowercase hex/);
    assert.match(reasonFor(`name@sha256:${'A'.repeat(64)}`), /lowercase hex/);
    assert.match(reasonFor(`name@md5:${'a'.repeat(32)}`), /sha256:, sha384: or sha512:/);
    assert.match(reasonFor(`name@constructor:${sha256}`), /sha256:, sha384: or sha512:/);
    assert.match(reasonFor(`name@sha256:${sha256}@sha256:${sha256}`), /digest/);
    assert.ok(parseImageReference(`name@sha512:${'0'.repeat(128)}`).ok);
  });

  it('refuses names longer than 255 characters', () => {
    assert.match(reasonFor(`${'a'.repeat(200)}/${'b'.repeat(60)}`), /longer than 255/);
  });
});

describe('imageReferenceRefusal', () => {
  it('names the field, the problem and the fix', () => {
    const message = imageReferenceRefusal('spec.image', 'Mooncake:1') ?? '';
    assert.match(
      message,
      /^spec\.image: "Mooncake:1" is not an image reference \(the repository path must be lowercase\)/,
    );
    assert.match(message, /write it as \[registry\/\]repository\[:tag\]/);
    assert.equal(imageReferenceRefusal('spec.image', 'mooncake:1'), undefined);
  });
});
