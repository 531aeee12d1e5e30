// The webhook's own certificate authority and serving certificate, kept in a Secret so every replica
// serves the same pair. Certificates are rotated before they expire, the CA bundle is patched into the
// webhook configurations, and each replica picks up a new pair without a restart.
import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { log } from './log.ts';
import type { KubeObject } from './object.ts';
import { certificateNotAfter, createCertificateAuthority, loadCertificateAuthority } from './pki.ts';
import type { ServingCertificate } from './webhook-server.ts';

type Secret = KubeObject & { type?: string; data?: Record<string, string> };
type WebhookConfiguration = KubeObject & {
  webhooks?: { name: string; clientConfig: { caBundle?: string } }[];
};

export interface WebhookCertOptions {
  namespace: string;
  secretName: string;
  /** DNS names and IPs the serving certificate must carry (the Service's names, 127.0.0.1 locally). */
  hosts: string[];
  /** ValidatingWebhookConfiguration / MutatingWebhookConfiguration names whose caBundle we own. */
  validatingConfigurations?: string[];
  mutatingConfigurations?: string[];
  caValidDays?: number;
  servingValidDays?: number;
  /** Rotate the serving certificate when less than this fraction of its life remains. */
  rotateAtRemainingFraction?: number;
}

interface Bundle {
  caCert: string;
  caKey: string;
  /** The previous CA, trusted until it expires so in-flight clients keep working during a CA rotation. */
  previousCaCert?: string;
  tlsCert: string;
  tlsKey: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString() : undefined);

export class WebhookCertificates {
  private readonly client: KubeClient;
  private readonly options: Required<WebhookCertOptions>;
  private current: Bundle | undefined;

  constructor(client: KubeClient, options: WebhookCertOptions) {
    this.client = client;
    this.options = {
      validatingConfigurations: [],
      mutatingConfigurations: [],
      caValidDays: 3650,
      servingValidDays: 365,
      rotateAtRemainingFraction: 1 / 3,
      ...options,
    };
  }

  get serving(): ServingCertificate | undefined {
    return this.current && { certPem: this.current.tlsCert, keyPem: this.current.tlsKey };
  }

  /** The PEM bundle clients must trust: the current CA and, during a CA rotation, the previous one. */
  get caBundle(): string | undefined {
    return this.current && [this.current.caCert, this.current.previousCaCert].filter(Boolean).join('');
  }

  /**
   * Reads the Secret, renews what is due (or missing) and writes it back, then patches the CA bundle
   * into the webhook configurations. Returns true when the serving pair changed since the last call.
   */
  async ensure(now = Date.now()): Promise<boolean> {
    const before = this.current?.tlsCert;
    for (let attempt = 0; attempt < 5; attempt++) {
      const secret = await this.client.find<Secret>(this.secretRef());
      let bundle = secret ? this.decode(secret) : undefined;
      const renewed = await this.renewIfDue(bundle, now);
      if (renewed) {
        try {
          await this.write(secret, renewed);
        } catch (err) {
          // Another replica rotated at the same moment: take what it wrote.
          if (err instanceof ApiError && (err.isConflict || err.isAlreadyExists)) continue;
          throw err;
        }
        bundle = renewed;
      }
      this.current = bundle;
      break;
    }
    if (!this.current) throw new Error('could not settle the webhook certificate Secret after 5 attempts');
    await this.patchCaBundles();
    return before !== this.current.tlsCert;
  }

  private secretRef() {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: this.options.namespace,
      name: this.options.secretName,
    };
  }

  private decode(secret: Secret): Bundle | undefined {
    const d = secret.data ?? {};
    const caCert = unb64(d['ca.crt']);
    const caKey = unb64(d['ca.key']);
    const tlsCert = unb64(d['tls.crt']);
    const tlsKey = unb64(d['tls.key']);
    if (!caCert || !caKey || !tlsCert || !tlsKey) return undefined;
    return { caCert, caKey, tlsCert, tlsKey, previousCaCert: unb64(d['ca-previous.crt']) };
  }

  private dueForRenewal(certPem: string, validDays: number, now: number): boolean {
    const remaining = certificateNotAfter(certPem).getTime() - now;
    return remaining < validDays * 86_400_000 * this.options.rotateAtRemainingFraction;
  }

  private async renewIfDue(bundle: Bundle | undefined, now: number): Promise<Bundle | undefined> {
    const o = this.options;
    const caDue = !bundle || this.dueForRenewal(bundle.caCert, o.caValidDays, now);
    const servingDue = caDue || !bundle || this.dueForRenewal(bundle.tlsCert, o.servingValidDays, now);
    if (!servingDue) return undefined;
    const ca = caDue
      ? await createCertificateAuthority('kvpool-webhook-ca', o.caValidDays)
      : loadCertificateAuthority({ certPem: bundle!.caCert, keyPem: bundle!.caKey });
    const serving = await ca.issue({
      commonName: o.hosts[0] ?? 'kvpool-webhook',
      hosts: o.hosts,
      usage: 'server',
      validDays: o.servingValidDays,
    });
    const previousCaCert = caDue ? bundle?.caCert : bundle?.previousCaCert;
    const previousStillValid = previousCaCert && certificateNotAfter(previousCaCert).getTime() > now;
    log.info({ secret: o.secretName, rotatedCa: caDue }, 'issued a new webhook serving certificate');
    return {
      caCert: ca.certPem,
      caKey: ca.keyPem,
      tlsCert: serving.certPem,
      tlsKey: serving.keyPem,
      ...(previousStillValid ? { previousCaCert } : {}),
    };
  }

  private async write(existing: Secret | undefined, bundle: Bundle): Promise<void> {
    const data: Record<string, string> = {
      'ca.crt': b64(bundle.caCert),
      'ca.key': b64(bundle.caKey),
      'tls.crt': b64(bundle.tlsCert),
      'tls.key': b64(bundle.tlsKey),
      ...(bundle.previousCaCert ? { 'ca-previous.crt': b64(bundle.previousCaCert) } : {}),
    };
    const body: Secret = {
      ...this.secretRef(),
      metadata: {
        name: this.options.secretName,
        namespace: this.options.namespace,
        ...(existing ? { resourceVersion: existing.metadata.resourceVersion } : {}),
      },
      type: 'kubernetes.io/tls',
      data,
    };
    if (existing) await this.client.replace(body);
    else await this.client.create(body);
  }

  private async patchCaBundles(): Promise<void> {
    const caBundle = b64(this.caBundle!);
    const targets = [
      ...this.options.validatingConfigurations.map((name) => ({
        kind: 'ValidatingWebhookConfiguration',
        name,
      })),
      ...this.options.mutatingConfigurations.map((name) => ({ kind: 'MutatingWebhookConfiguration', name })),
    ];
    for (const t of targets) {
      const ref = { apiVersion: 'admissionregistration.k8s.io/v1', kind: t.kind, name: t.name };
      const config = await this.client.find<WebhookConfiguration>(ref);
      if (!config?.webhooks?.length) continue;
      const ops = config.webhooks.flatMap((w, i) =>
        w.clientConfig.caBundle === caBundle
          ? []
          : [{ op: 'add' as const, path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }],
      );
      if (ops.length === 0) continue;
      await this.client.jsonPatch(ref, [
        { op: 'test', path: '/metadata/resourceVersion', value: config.metadata.resourceVersion },
        ...ops,
      ]);
    }
  }
}
