// A container's environment as the kubelet builds it: the image's variables, the service variables,
// `envFrom`, then `env` (each value may reference earlier ones as `$(NAME)`), and the `$(NAME)`
// expansion of command and args.
import { ContainerConfigError } from './errors.ts';
import type { ConfigMap, Container, EnvVarSource, ObjectFieldSelector, Pod, Secret } from './pod-types.ts';
import { resourceFieldValue } from './resource-fields.ts';

export interface EnvSources {
  configMap(namespace: string, name: string): ConfigMap | undefined;
  secret(namespace: string, name: string): Secret | undefined;
}

export interface PodAddresses {
  podIP: string;
  hostIP: string;
}

/**
 * Kubernetes `$(VAR)` expansion: a defined `$(VAR)` is replaced, an undefined one stays as written,
 * `$$` is a literal `$` (so `$$(VAR)` yields `$(VAR)`).
 */
export function expandVars(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 1;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      out += lookup(name) ?? `$(${name})`;
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

/** The value of a downward-API field of the Pod (`metadata.labels['k']`, `status.podIP`…). */
export function podFieldValue(pod: Pod, ref: ObjectFieldSelector, addresses: PodAddresses): string {
  const path = ref.fieldPath;
  const keyed = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(path);
  if (keyed) {
    const map = keyed[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[keyed[2]!] ?? '';
  }
  switch (path) {
    case 'metadata.name':
      return pod.metadata.name ?? '';
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.podIPs':
      return addresses.podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return addresses.hostIP;
    default:
      throw new ContainerConfigError(`unsupported fieldPath ${path}`);
  }
}

/** `key="value"` lines, sorted, as the downward API writes label and annotation maps. */
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map![k])}`)
    .join('\n');
}

function decode(b64: string): string {
  return Buffer.from(b64, 'base64').toString('utf8');
}

/** A ConfigMap's or Secret's keys as strings. */
export function objectData(kind: 'ConfigMap' | 'Secret', obj: ConfigMap | Secret): Record<string, string> {
  const out: Record<string, string> = {};
  if (kind === 'ConfigMap') {
    const cm = obj as ConfigMap;
    for (const [k, v] of Object.entries(cm.binaryData ?? {})) out[k] = decode(v);
    Object.assign(out, cm.data ?? {});
  } else {
    for (const [k, v] of Object.entries((obj as Secret).data ?? {})) out[k] = decode(v);
  }
  return out;
}

function valueFrom(
  src: EnvVarSource,
  pod: Pod,
  container: Container,
  addresses: PodAddresses,
  sources: EnvSources,
  allocatable: Record<string, string>,
): string | undefined {
  const ns = pod.metadata.namespace ?? 'default';
  if (src.fieldRef) return podFieldValue(pod, src.fieldRef, addresses);
  if (src.resourceFieldRef) return resourceFieldValue(pod, container, src.resourceFieldRef, allocatable);
  const ref = src.configMapKeyRef ?? src.secretKeyRef;
  if (!ref) return undefined;
  const kind = src.configMapKeyRef ? 'ConfigMap' : 'Secret';
  const obj = kind === 'ConfigMap' ? sources.configMap(ns, ref.name) : sources.secret(ns, ref.name);
  if (!obj) {
    if (ref.optional) return undefined;
    throw new ContainerConfigError(`${kind.toLowerCase()} "${ref.name}" not found`);
  }
  const value = objectData(kind, obj)[ref.key];
  if (value === undefined && !ref.optional) {
    throw new ContainerConfigError(`couldn't find key ${ref.key} in ${kind} ${ns}/${ref.name}`);
  }
  return value;
}

export interface EnvContext {
  pod: Pod;
  container: Container;
  addresses: PodAddresses;
  sources: EnvSources;
  /** Variables every container gets first (the image's, PATH, HOME, HOSTNAME, service variables). */
  base: Record<string, string>;
  /** The node's allocatable resources, for resourceFieldRef of an unset limit. */
  allocatable: Record<string, string>;
}

/** The container's environment; throws ContainerConfigError when a required reference is missing. */
export function containerEnv(ctx: EnvContext): Record<string, string> {
  const { pod, container, sources } = ctx;
  const ns = pod.metadata.namespace ?? 'default';
  const env: Record<string, string> = { ...ctx.base };
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const kind = from.configMapRef ? 'ConfigMap' : 'Secret';
    const obj = kind === 'ConfigMap' ? sources.configMap(ns, ref.name) : sources.secret(ns, ref.name);
    if (!obj) {
      if (ref.optional) continue;
      throw new ContainerConfigError(`${kind.toLowerCase()} "${ref.name}" not found`);
    }
    for (const [k, v] of Object.entries(objectData(kind, obj))) env[`${from.prefix ?? ''}${k}`] = v;
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom) {
      const v = valueFrom(e.valueFrom, pod, container, ctx.addresses, sources, ctx.allocatable);
      if (v !== undefined) env[e.name] = v;
    } else {
      env[e.name] = expandVars(e.value ?? '', (n) => env[n]);
    }
  }
  return env;
}

/** The argv a container runs: command overrides the image's entrypoint, args its default arguments. */
export function containerArgv(
  container: Container,
  image: { command?: string[]; args?: string[] },
  env: Record<string, string>,
): string[] {
  const lookup = (n: string) => env[n];
  const command = container.command?.length ? container.command : (image.command ?? []);
  const args = container.args?.length ? container.args : container.command?.length ? [] : (image.args ?? []);
  return [...command, ...args].map((s) => expandVars(s, lookup));
}
