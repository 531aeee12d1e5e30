// Where the API server is and how to authenticate to it, read from a kubeconfig or from the Pod's
// ServiceAccount. Only what the operator and the store agent use (a server, its CA, a bearer token or
// token file, a client certificate); anything else (exec plugins, auth providers, basic auth, proxies)
// is left to @kubernetes/client-node, which costs the process about 60 MiB of memory to load
// (decision 41), so it is loaded only then.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { hostPort } from './host-port.ts';

export interface ClusterAccess {
  server: string;
  ca?: string;
  cert?: string;
  key?: string;
  skipTLSVerify: boolean;
  /** A bearer token given inline. */
  token?: string;
  /** A bearer token kept in a file, read again as it rotates. */
  tokenFile?: string;
}

type Entry = Record<string, unknown>;
interface Kubeconfig {
  'current-context'?: string;
  contexts?: { name?: string; context?: { cluster?: string; user?: string } }[];
  clusters?: { name?: string; cluster?: Entry }[];
  users?: { name?: string; user?: Entry }[];
}

const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';
/** User and cluster fields this reader handles; any other field sends the kubeconfig to the library. */
const userFields = new Set([
  'token',
  'tokenFile',
  'token-file',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
]);
const clusterFields = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
]);

const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

/** Inline base64 data, else the file it names (relative to the kubeconfig). */
function material(entry: Entry, field: string, base: string): string | undefined {
  const data = str(entry[`${field}-data`]);
  if (data) return Buffer.from(data, 'base64').toString('utf8');
  const file = str(entry[field]);
  return file ? readFileSync(resolve(base, file), 'utf8') : undefined;
}

/** A kubeconfig file's current context, or undefined when it needs more than this reader handles. */
export function readKubeconfig(path: string): ClusterAccess | undefined {
  const doc = (parse(readFileSync(path, 'utf8')) ?? {}) as Kubeconfig;
  const base = dirname(path);
  const context = doc.contexts?.find((c) => c.name === doc['current-context'])?.context;
  const cluster = doc.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === context?.user)?.user ?? {};
  if (!cluster || !str(cluster.server)) return undefined;
  if (Object.keys(cluster).some((k) => !clusterFields.has(k))) return undefined;
  if (Object.keys(user).some((k) => !userFields.has(k))) return undefined;
  const tokenFile = str(user.tokenFile) ?? str(user['token-file']);
  return {
    server: str(cluster.server)!,
    ca: material(cluster, 'certificate-authority', base),
    cert: material(user, 'client-certificate', base),
    key: material(user, 'client-key', base),
    skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    token: str(user.token),
    tokenFile: tokenFile ? resolve(base, tokenFile) : undefined,
  };
}

/** The Pod's ServiceAccount, when running in a Pod. */
export function inClusterAccess(): ClusterAccess | undefined {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  const tokenFile = join(serviceAccountDir, 'token');
  if (!host || !port || !existsSync(tokenFile)) return undefined;
  const caFile = join(serviceAccountDir, 'ca.crt');
  return {
    server: `https://${hostPort(host, port)}`,
    ca: existsSync(caFile) ? readFileSync(caFile, 'utf8') : undefined,
    skipTLSVerify: false,
    tokenFile,
  };
}

/**
 * As client-node's loadFromDefault: $KUBECONFIG, else ~/.kube/config, else the Pod's ServiceAccount.
 * Undefined when that needs the library (a merged $KUBECONFIG list, or fields this reader leaves).
 */
export function defaultAccess(): ClusterAccess | undefined {
  const env = process.env.KUBECONFIG;
  if (env) {
    const paths = env.split(delimiter).filter(Boolean);
    return paths.length === 1 ? readKubeconfig(paths[0]!) : undefined;
  }
  const home = join(homedir(), '.kube', 'config');
  if (existsSync(home)) return readKubeconfig(home);
  return inClusterAccess();
}
