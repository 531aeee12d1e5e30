// The webhook's own certificate authority and serving certificate, kept in a Secret so every replica
// serves the same pair. Only the leader writes (ensure): it issues and rotates the certificates before
// they expire (a new CA in two steps, see cert-rotation.ts) and patches the CA bundle into the webhook
// configurations, reading them back to learn when the apiserver holds a staged CA; every other replica
// only reads the Secret (load) and picks up a new pair without a restart. With `external`
// (cert-manager) nobody here writes: the Secret is only read.
import type {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from 'kubernetes-types/admissionregistration/v1.js';
import type { Secret } from 'kubernetes-types/core/v1.js';
import { planRotation, stagedCaPublishedSince } from './cert-rotation.ts';
import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { log } from './log.ts';
import type { KubeObject } from './object.ts';
import {
  bundleCarries,
  certificateCovers,
  certificateNotAfter,
  createCertificateAuthority,
  loadCertificateAuthority,
} from './pki.ts';
import type { ServingCertificate } from './webhook-server.ts';

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
  /** Rotate a certificate when less than this fraction of its life remains. */
  rotateAtRemainingFraction?: number;
  /** How long every CA bundle carries a new CA before it signs the serving certificate. */
  caPropagationMs?: number;
  /** The Secret and the CA bundles are written by someone else (cert-manager): only read the Secret. */
  external?: boolean;
}

interface Bundle {
  caCert: string;
  caKey: string;
  /** The previous CA, trusted until it expires so in-flight clients keep working during a CA rotation. */
  previousCaCert?: string;
  /**
   * A new CA in the bundle, not yet signing; `since` is when it was staged, `publishedSince` when every
   * webhook configuration's CA bundle, as read back from the apiserver, was first seen to carry it.
   */
  stagedCa?: { certPem: string; keyPem: string; since: number; publishedSince?: number };
  tlsCert: string;
  tlsKey: string;
}

type Configuration = KubeObject<ValidatingWebhookConfiguration | MutatingWebhookConfiguration>;

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
      caPropagationMs: 5 * 60_000,
      external: false,
      ...options,
    };
  }

  get serving(): ServingCertificate | undefined {
    return this.current && { certPem: this.current.tlsCert, keyPem: this.current.tlsKey };
  }

  /** The PEM bundle clients must trust: the current CA, a staged one, and the previous one. */
  get caBundle(): string | undefined {
    const c = this.current;
    return c && [c.caCert, c.stagedCa?.certPem, c.previousCaCert].filter(Boolean).join('');
  }

  /**
   * Reads the Secret and nothing else (a replica that does not lead). A missing or unreadable Secret
   * keeps the pair already served. Returns true when the serving pair changed since the last call.
   */
  async load(): Promise<boolean> {
    const before = this.current?.tlsCert;
    const secret = await this.client.find<KubeObject<Secret>>(this.secretRef());
    const bundle = secret && this.decode(secret);
    if (bundle) this.current = bundle;
    return this.current !== undefined && before !== this.current.tlsCert;
  }

  /**
   * The leader's step: reads the Secret and the webhook configurations, notes when their CA bundles
   * first all carry a staged CA, renews what is due (or missing, or not valid for every host) and
   * writes it back, then patches the CA bundle into the configurations. Returns true when the serving
   * pair changed since the last call. With `external` it only reads.
   */
  async ensure(now = Date.now()): Promise<boolean> {
    if (this.options.external) return this.load();
    const before = this.current?.tlsCert;
    let configurations: Configuration[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const secret = await this.client.find<KubeObject<Secret>>(this.secretRef());
      let bundle = secret ? this.decode(secret) : undefined;
      configurations = await this.readConfigurations();
      const observed = bundle && this.observePublication(bundle, configurations, now);
      const publicationChanged = observed?.stagedCa?.publishedSince !== bundle?.stagedCa?.publishedSince;
      const renewed = (await this.renewIfDue(observed, now)) ?? (publicationChanged ? observed : undefined);
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
    await this.patchCaBundles(configurations);
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

  private decode(secret: KubeObject<Secret>): Bundle | undefined {
    const d = secret.data ?? {};
    const caCert = unb64(d['ca.crt']);
    const caKey = unb64(d['ca.key']);
    const tlsCert = unb64(d['tls.crt']);
    const tlsKey = unb64(d['tls.key']);
    // An issuer's Secret (cert-manager) carries the serving pair; the CA key stays with the issuer.
    if (this.options.external)
      return tlsCert && tlsKey ? { caCert: caCert ?? '', caKey: '', tlsCert, tlsKey } : undefined;
    if (!caCert || !caKey || !tlsCert || !tlsKey) return undefined;
    const stagedCert = unb64(d['ca-staged.crt']);
    const stagedKey = unb64(d['ca-staged.key']);
    const stagedSince = Date.parse(unb64(d['ca-staged-since']) ?? '');
    const publishedSince = Date.parse(unb64(d['ca-staged-published-since']) ?? '');
    return {
      caCert,
      caKey,
      tlsCert,
      tlsKey,
      previousCaCert: unb64(d['ca-previous.crt']),
      ...(stagedCert && stagedKey
        ? {
            stagedCa: {
              certPem: stagedCert,
              keyPem: stagedKey,
              since: Number.isNaN(stagedSince) ? Date.now() : stagedSince,
              // An unreadable time counts as never seen: the wait starts from the next look.
              ...(Number.isNaN(publishedSince) ? {} : { publishedSince }),
            },
          }
        : {}),
    };
  }

  private async renewIfDue(bundle: Bundle | undefined, now: number): Promise<Bundle | undefined> {
    const o = this.options;
    const planned = planRotation(
      bundle && {
        caNotAfter: certificateNotAfter(bundle.caCert).getTime(),
        servingNotAfter: certificateNotAfter(bundle.tlsCert).getTime(),
        ...(bundle.stagedCa ? { stagedCa: { publishedSince: bundle.stagedCa.publishedSince } } : {}),
      },
      now,
      o,
    );
    // A certificate issued for other names (a renamed Service) is issued again before it is served.
    const plan = { ...planned, serving: planned.serving || !certificateCovers(bundle!.tlsCert, o.hosts) };
    if (plan.ca === 'keep' && !plan.serving) return undefined;
    const newCa = async () => createCertificateAuthority('kvpool-webhook-ca', o.caValidDays);
    let signing = bundle && { certPem: bundle.caCert, keyPem: bundle.caKey };
    let previousCaCert = bundle?.previousCaCert;
    let stagedCa = bundle?.stagedCa;
    if (plan.ca === 'replace' || plan.ca === 'promote') {
      previousCaCert = bundle?.caCert ?? previousCaCert;
      signing = plan.ca === 'promote' ? stagedCa! : await newCa();
      stagedCa = undefined;
    } else if (plan.ca === 'stage') {
      const ca = await newCa();
      stagedCa = { certPem: ca.certPem, keyPem: ca.keyPem, since: now };
    }
    const serving = plan.serving
      ? await loadCertificateAuthority(signing!).issue({
          commonName: o.hosts[0] ?? 'kvpool-webhook',
          hosts: o.hosts,
          usage: 'server',
          validDays: o.servingValidDays,
        })
      : { certPem: bundle!.tlsCert, keyPem: bundle!.tlsKey };
    const previousStillValid = previousCaCert && certificateNotAfter(previousCaCert).getTime() > now;
    log.info(
      { secret: o.secretName, ca: plan.ca, renewedServing: plan.serving },
      'rotated webhook certificates',
    );
    return {
      caCert: signing!.certPem,
      caKey: signing!.keyPem,
      tlsCert: serving.certPem,
      tlsKey: serving.keyPem,
      ...(previousStillValid ? { previousCaCert } : {}),
      ...(stagedCa ? { stagedCa } : {}),
    };
  }

  private async write(existing: KubeObject<Secret> | undefined, bundle: Bundle): Promise<void> {
    const data: Record<string, string> = {
      'ca.crt': b64(bundle.caCert),
      'ca.key': b64(bundle.caKey),
      'tls.crt': b64(bundle.tlsCert),
      'tls.key': b64(bundle.tlsKey),
      ...(bundle.previousCaCert ? { 'ca-previous.crt': b64(bundle.previousCaCert) } : {}),
      ...(bundle.stagedCa
        ? {
            'ca-staged.crt': b64(bundle.stagedCa.certPem),
            'ca-staged.key': b64(bundle.stagedCa.keyPem),
            'ca-staged-since': b64(new Date(bundle.stagedCa.since).toISOString()),
            ...(bundle.stagedCa.publishedSince !== undefined
              ? { 'ca-staged-published-since': b64(new Date(bundle.stagedCa.publishedSince).toISOString()) }
              : {}),
          }
        : {}),
    };
    // A full update: the labels, annotations and owners the chart set are sent back, or they are lost.
    const { managedFields: _, ...kept } = existing?.metadata ?? {};
    const body: KubeObject<Secret> = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { ...kept, name: this.options.secretName, namespace: this.options.namespace },
      // An existing Secret keeps its type (the chart creates it empty, as Opaque): the type is immutable.
      type: existing?.type ?? 'kubernetes.io/tls',
      data,
    };
    if (existing) await this.client.replace(body);
    else await this.client.create(body);
  }

  /** The webhook configurations whose caBundle we own, as the apiserver holds them (absent ones left out). */
  private async readConfigurations(): Promise<Configuration[]> {
    const refs = [
      ...this.options.validatingConfigurations.map((name) =>
        this.configurationRef('ValidatingWebhookConfiguration', name),
      ),
      ...this.options.mutatingConfigurations.map((name) =>
        this.configurationRef('MutatingWebhookConfiguration', name),
      ),
    ];
    const found = await Promise.all(refs.map((ref) => this.client.find<Configuration>(ref)));
    return found.filter((c): c is Configuration => c !== undefined);
  }

  private configurationRef(kind: string, name: string) {
    return { apiVersion: 'admissionregistration.k8s.io/v1', kind, name };
  }

  /** The bundle with its staged CA's publication brought up to what the configurations carry now. */
  private observePublication(bundle: Bundle, configurations: Configuration[], now: number): Bundle {
    const staged = bundle.stagedCa;
    if (!staged) return bundle;
    const carried = configurations
      .flatMap((c) => c.webhooks ?? [])
      .every((w) => bundleCarries(unb64(w.clientConfig.caBundle) ?? '', staged.certPem));
    const { publishedSince: _, ...rest } = staged;
    const since = stagedCaPublishedSince(staged.publishedSince, carried, now);
    return { ...bundle, stagedCa: { ...rest, ...(since !== undefined ? { publishedSince: since } : {}) } };
  }

  private async patchCaBundles(configurations: Configuration[]): Promise<void> {
    const caBundle = b64(this.caBundle!);
    for (const config of configurations) {
      if (!config.webhooks?.length) continue;
      const ops = config.webhooks.flatMap((w, i) =>
        w.clientConfig.caBundle === caBundle
          ? []
          : [{ op: 'add' as const, path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }],
      );
      if (ops.length === 0) continue;
      await this.client.jsonPatch(this.configurationRef(config.kind!, config.metadata.name!), [
        { op: 'test', path: '/metadata/resourceVersion', value: config.metadata.resourceVersion },
        ...ops,
      ]);
    }
  }
}
