// A small certificate authority: ECDSA P-256 keys and X.509 certificates as PEM. Used for the local
// control plane and for the admission webhook's serving certificate.
import { webcrypto, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
// @peculiar/x509 resolves its providers through decorators, which need the metadata polyfill first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

// x509 signs with globalThis.crypto, which on Node is node:crypto's webcrypto (what the keys come from).

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  /** Issues a leaf certificate signed by this CA. */
  issue(request: LeafRequest): Promise<KeyPairPem>;
}

export interface LeafRequest {
  commonName: string;
  organizations?: string[];
  /** DNS names and IP addresses; each lands in the subjectAltName. */
  hosts?: string[];
  usage: 'server' | 'client' | 'both';
  validDays?: number;
}

/** PEM text always ends in a newline, so bundles can be concatenated. */
const pem = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(keyAlgorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return pem(x509.PemConverter.encode(der, 'PRIVATE KEY'));
}

async function importPrivateKey(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0]!;
  return webcrypto.subtle.importKey('pkcs8', der, keyAlgorithm, true, ['sign']);
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  // Backdated a minute so a freshly issued certificate is valid on a clock that lags slightly.
  const notBefore = new Date(Date.now() - 60_000);
  return { notBefore, notAfter: new Date(notBefore.getTime() + days * 86_400_000) };
}

function distinguishedName(commonName: string, organizations: string[] = []): string {
  const escapeDn = (v: string) => v.replace(/([,+"\\<>;=])/g, '\\$1');
  return [`CN=${escapeDn(commonName)}`, ...organizations.map((o) => `O=${escapeDn(o)}`)].join(', ');
}

export async function createCertificateAuthority(
  commonName: string,
  validDays = 3650,
): Promise<CertificateAuthority> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: distinguishedName(commonName),
    keys,
    signingAlgorithm,
    ...validity(validDays),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return loadCertificateAuthority({
    certPem: pem(cert.toString('pem')),
    keyPem: await privateKeyPem(keys.privateKey),
  });
}

/** Re-opens a CA from its PEM pair (for example one kept in a Secret). */
export function loadCertificateAuthority(pair: KeyPairPem): CertificateAuthority {
  const caCert = new x509.X509Certificate(pair.certPem);
  return {
    ...pair,
    async issue(request: LeafRequest): Promise<KeyPairPem> {
      const keys = await generateKeys();
      const usages = {
        server: [x509.ExtendedKeyUsage.serverAuth],
        client: [x509.ExtendedKeyUsage.clientAuth],
        both: [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
      }[request.usage];
      const extensions: x509.Extension[] = [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
          true,
        ),
        new x509.ExtendedKeyUsageExtension(usages),
        await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ];
      if (request.hosts?.length) {
        extensions.push(
          new x509.SubjectAlternativeNameExtension(
            request.hosts.map((h) => ({ type: isIP(h) ? ('ip' as const) : ('dns' as const), value: h })),
          ),
        );
      }
      const cert = await x509.X509CertificateGenerator.create({
        subject: distinguishedName(request.commonName, request.organizations),
        issuer: caCert.subject,
        publicKey: keys.publicKey,
        signingKey: await importPrivateKey(pair.keyPem),
        signingAlgorithm,
        ...validity(request.validDays ?? 365),
        extensions,
      });
      return { certPem: pem(cert.toString('pem')), keyPem: await privateKeyPem(keys.privateKey) };
    },
  };
}

/** A bare key pair as PEM (for service-account token signing). */
export async function createSigningKeyPair(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
  const keys = await generateKeys();
  const spki = await webcrypto.subtle.exportKey('spki', keys.publicKey);
  return {
    publicKeyPem: pem(x509.PemConverter.encode(spki, 'PUBLIC KEY')),
    privateKeyPem: await privateKeyPem(keys.privateKey),
  };
}

/** Whether the certificate is valid for every DNS name and IP address in `hosts`. */
export function certificateCovers(certPem: string, hosts: string[]): boolean {
  const cert = new X509Certificate(certPem);
  return hosts.every(
    (h) => (isIP(h) ? cert.checkIP(h) : cert.checkHost(h, { wildcards: false })) !== undefined,
  );
}

/** When a PEM certificate stops being valid. */
export function certificateNotAfter(certPem: string): Date {
  return new x509.X509Certificate(certPem).notAfter;
}

/** Whether a PEM bundle holds this very certificate (the same DER bytes); unreadable blocks hold none. */
export function bundleCarries(bundlePem: string, certPem: string): boolean {
  const wanted = new X509Certificate(certPem).raw;
  const blocks = bundlePem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  return blocks.some((block) => {
    try {
      return new X509Certificate(block).raw.equals(wanted);
    } catch {
      return false;
    }
  });
}
