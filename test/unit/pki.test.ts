import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bundleCarries, createCertificateAuthority } from '../../src/kube/pki.ts';

describe('bundleCarries', () => {
  it('finds a certificate among a PEM bundle’s, whatever its line endings', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => createCertificateAuthority(n, 1)));
    const bundle = a!.certPem + b!.certPem;
    assert.equal(bundleCarries(bundle, b!.certPem), true);
    assert.equal(bundleCarries(bundle.replaceAll('\n', '\r\n'), a!.certPem), true);
    assert.equal(bundleCarries(bundle, c!.certPem), false);
  });

  it('finds nothing in an empty or unreadable bundle', async () => {
    const ca = await createCertificateAuthority('a', 1);
    assert.equal(bundleCarries('', ca.certPem), false);
    assert.equal(
      bundleCarries('-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n', ca.certPem),
      false,
    );
  });
});
