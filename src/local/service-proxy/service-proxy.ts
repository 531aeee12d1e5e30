// The local cluster's service proxy: a stand-in for kube-proxy and cluster DNS. Each Service gets a
// stable address in 127.254.0.0/16 with a TCP listener per port that forwards to the Service's ready
// endpoints; containers resolve `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc` and
// `<svc>.<ns>.svc.cluster.local` to that address through their /etc/hosts. In a real cluster
// kube-proxy (or the CNI) and CoreDNS do this with ClusterIPs.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { KubeClient } from '../../kube/client.ts';
import { Informer, objectKey } from '../../kube/informer.ts';
import { log } from '../../kube/log.ts';
import { AddressPool } from '../node-agent/address-pool.ts';
import {
  backendsFor,
  type EndpointSlice,
  endpointHostnames,
  type Service,
  type ServicePort,
  serviceNameLabel,
} from './endpoints.ts';
import { PortForwarder } from './forwarder.ts';
import { type ClusterNames, type HostsEntry, renderHosts, writeInPlace } from './hosts-file.ts';

export interface ServiceProxyOptions {
  client: KubeClient;
  /** The shared hosts file (every Service's names) is `<root>/service-proxy/hosts`. */
  root: string;
  /**
   * Where `kubernetes.default` forwards to. The API server cannot publish a loopback address in the
   * Service's endpoints (validation refuses it), so the proxy is told.
   */
  apiServer?: { host: string; port: number };
}

function portKey(p: ServicePort): string {
  return `${p.protocol ?? 'TCP'}/${p.port}`;
}

export class ServiceProxy implements ClusterNames {
  private readonly logger = log.child({ program: 'service-proxy' });
  private readonly services: Informer<Service>;
  private readonly slices: Informer<EndpointSlice>;
  private readonly addresses: AddressPool;
  /** Listeners per Service key, by `protocol/port`. */
  private readonly listeners = new Map<string, Map<string, PortForwarder>>();
  private readonly closing = new Set<Promise<void>>();
  private readonly subscribers = new Set<() => void>();
  private lastNames = '';
  private readonly apiServer: { host: string; port: number } | undefined;
  /** The hosts file listing every Service, kept up to date in place. */
  readonly hostsFile: string;

  constructor(options: ServiceProxyOptions) {
    this.hostsFile = join(options.root, 'service-proxy', 'hosts');
    this.apiServer = options.apiServer;
    // Salted by the root, so two local clusters on one machine rarely pick the same address.
    this.addresses = new AddressPool('127.254.0.1', 65534, options.root);
    this.services = new Informer<Service>(options.client, { apiVersion: 'v1', kind: 'Service' });
    this.slices = new Informer<EndpointSlice>(options.client, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      indexers: {
        service: (s) => {
          const svc = s.metadata.labels?.[serviceNameLabel];
          return svc ? [`${s.metadata.namespace}/${svc}`] : [];
        },
      },
    });
  }

  async start(): Promise<void> {
    mkdirSync(dirname(this.hostsFile), { recursive: true });
    writeInPlace(this.hostsFile, renderHosts([]));
    this.services.on((event, svc) => this.onService(event, svc));
    this.slices.on(() => this.publishNames());
    this.slices.start();
    this.services.start();
    await Promise.all([this.services.waitForSync(), this.slices.waitForSync()]);
    this.publishNames();
  }

  async stop(): Promise<void> {
    await Promise.all([this.services.stop(), this.slices.stop()]);
    for (const ports of this.listeners.values()) for (const f of ports.values()) this.close(f);
    this.listeners.clear();
    await Promise.all(this.closing);
    this.subscribers.clear();
  }

  private close(f: PortForwarder): void {
    const done = f.close();
    this.closing.add(done);
    void done.then(() => this.closing.delete(done));
  }

  /** The proxy address of a Service, once it has one. */
  addressOf(namespace: string, name: string): string | undefined {
    return this.addresses.get(`${namespace}/${name}`);
  }

  private proxied(svc: Service): boolean {
    return svc.spec?.type !== 'ExternalName';
  }

  private onService(event: string, svc: Service): void {
    const key = objectKey(svc);
    const current = this.listeners.get(key) ?? new Map<string, PortForwarder>();
    const wanted = event === 'delete' || !this.proxied(svc) ? [] : (svc.spec?.ports ?? []);
    const wantedKeys = new Set(wanted.filter((p) => (p.protocol ?? 'TCP') === 'TCP').map(portKey));
    for (const [k, f] of current) {
      if (!wantedKeys.has(k)) {
        this.close(f);
        current.delete(k);
      }
    }
    if (event === 'delete' || !this.proxied(svc)) {
      this.listeners.delete(key);
      this.addresses.release(key);
      this.publishNames();
      return;
    }
    const address = this.addresses.allocate(key);
    for (const p of wanted) {
      if ((p.protocol ?? 'TCP') !== 'TCP' || current.has(portKey(p))) continue;
      const name = p.name;
      const backends = () => {
        const live = this.services.get(svc.metadata.name!, svc.metadata.namespace);
        const port = live?.spec?.ports?.find((x) => x.port === p.port) ?? { ...p, name };
        const found = backendsFor(port, this.slices.byIndex('service', key));
        if (!found.length && key === 'default/kubernetes' && this.apiServer) return [this.apiServer];
        return found;
      };
      current.set(
        portKey(p),
        new PortForwarder(address, p.port, backends, this.logger.child({ service: key })),
      );
    }
    this.listeners.set(key, current);
    this.publishNames();
  }

  /** Hosts entries for a container in `namespace` (bare Service names only for its own namespace). */
  entries(namespace?: string): HostsEntry[] {
    const out: HostsEntry[] = [];
    const services = this.services
      .list()
      .filter((s) => this.proxied(s) && this.addresses.get(objectKey(s)))
      .sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
    for (const svc of services) {
      const name = svc.metadata.name!;
      const ns = svc.metadata.namespace!;
      const qualified = [`${name}.${ns}`, `${name}.${ns}.svc`, `${name}.${ns}.svc.cluster.local`];
      const names = namespace === undefined || namespace === ns ? [name, ...qualified] : qualified;
      out.push({ address: this.addresses.get(objectKey(svc))!, names });
      out.push(...endpointHostnames(svc, this.slices.byIndex('service', objectKey(svc))));
    }
    return out;
  }

  subscribe(listener: () => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  private publishNames(): void {
    const text = renderHosts(this.entries());
    if (text === this.lastNames) return;
    this.lastNames = text;
    writeInPlace(this.hostsFile, text);
    for (const s of this.subscribers) s();
  }
}
