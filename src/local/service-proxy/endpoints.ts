// Which backends a Service port forwards to, read from the Service's EndpointSlices (pure): the ready
// endpoints' addresses with the slice port of the same name, as kube-proxy picks them.
import type { KubeObject } from '../../kube/object.ts';

export interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
  targetPort?: number | string;
}

export type Service = KubeObject & {
  spec?: { type?: string; clusterIP?: string; ports?: ServicePort[] };
};

export interface SliceEndpoint {
  addresses: string[];
  hostname?: string;
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
}

export type EndpointSlice = KubeObject & {
  addressType?: string;
  endpoints?: SliceEndpoint[] | null;
  ports?: { name?: string; port?: number; protocol?: string }[] | null;
};

export interface Backend {
  host: string;
  port: number;
}

export const serviceNameLabel = 'kubernetes.io/service-name';

/** Ready backends of one Service port, in a stable order. */
export function backendsFor(port: ServicePort, slices: EndpointSlice[]): Backend[] {
  const out: Backend[] = [];
  const name = port.name ?? '';
  for (const slice of slices) {
    if (slice.addressType && slice.addressType !== 'IPv4') continue;
    const slicePort = (slice.ports ?? []).find(
      (p) => (p.name ?? '') === name && (p.protocol ?? 'TCP') === 'TCP',
    );
    if (slicePort?.port === undefined) continue;
    for (const ep of slice.endpoints ?? []) {
      if (ep.conditions?.ready === false) continue;
      for (const host of ep.addresses) out.push({ host, port: slicePort.port });
    }
  }
  const key = (b: Backend) => `${b.host}:${b.port}`;
  return [...new Map(out.map((b) => [key(b), b])).values()].sort((a, b) => key(a).localeCompare(key(b)));
}

/** Names of endpoints that carry a hostname (StatefulSet Pods under a headless Service). */
export function endpointHostnames(
  service: Service,
  slices: EndpointSlice[],
): { address: string; names: string[] }[] {
  const svc = service.metadata.name;
  const ns = service.metadata.namespace;
  const out: { address: string; names: string[] }[] = [];
  for (const slice of slices) {
    for (const ep of slice.endpoints ?? []) {
      const address = ep.addresses[0];
      if (!ep.hostname || !address) continue;
      const base = `${ep.hostname}.${svc}.${ns}`;
      out.push({ address, names: [`${base}.svc.cluster.local`, `${base}.svc`, base] });
    }
  }
  return out;
}
