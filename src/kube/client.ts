// A thin JSON client for the Kubernetes API: server-side apply (objects and status) with explicit field
// managers, get/list/delete, and typed errors. Configuration and authentication come from kubeconfig.ts
// (or @kubernetes/client-node's KubeConfig for what it leaves); requests go through undici so the operator controls content
// types, subresources and streaming itself. A token kept in a file (the projected ServiceAccount token
// in a Pod, a kubeconfig's `token-file`) is read again as it is rotated, never captured once.
import { existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ListMeta } from 'kubernetes-types/meta/v1.js';
import { Agent, type Dispatcher, request } from 'undici';
import { parse } from 'yaml';
import { ApiError } from './errors.ts';
import { type ClusterAccess, defaultAccess, readKubeconfig } from './kubeconfig.ts';
import { apiWrites, restClientRequestDuration, restClientRequests } from './metrics.ts';
import type { KubeObject } from './object.ts';
import { type ObjectRef, ResourceResolver } from './resources.ts';
import { TokenFile } from './token-file.ts';

export type { KubeObject };

/** A list of one kind, as a collection's GET serves it. */
export interface ObjectList<T = KubeObject> {
  metadata: ListMeta;
  items: T[];
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** Milliseconds before the request is abandoned; none for watches. */
  timeoutMs?: number;
}

/** How a client made by `with()` differs from the one it was made from. */
export interface ClientView {
  /** The User-Agent every request sends: the audit log names the replica that made a request by it. */
  userAgent?: string;
  /**
   * Every write (any method but GET) takes the signal this returns as it starts (the leadership term's):
   * refused before it is sent when aborted, cancelled in flight when it aborts. Reads never take it.
   */
  writeSignal?: () => AbortSignal;
}

export interface ApplyOptions {
  fieldManager: string;
  force?: boolean;
  subresource?: 'status';
}

export class KubeClient {
  readonly server: string;
  readonly resources: ResourceResolver;
  private readonly dispatcher: Dispatcher;
  private readonly headers: Record<string, string>;
  private readonly tokenFile: TokenFile | undefined;
  private readonly writeSignal: (() => AbortSignal) | undefined;
  private readonly connect: (() => Dispatcher) | undefined;

  private constructor(
    server: string,
    dispatcher: Dispatcher,
    headers: Record<string, string>,
    tokenFile: TokenFile | undefined,
    resources?: ResourceResolver,
    writeSignal?: () => AbortSignal,
    connect?: () => Dispatcher,
  ) {
    this.server = server.replace(/\/$/, '');
    this.connect = connect;
    this.dispatcher = dispatcher;
    this.headers = headers;
    this.tokenFile = tokenFile;
    this.resources = resources ?? new ResourceResolver((path) => this.request('GET', path));
    this.writeSignal = writeSignal;
  }

  /** This client on the same connections, credentials and discovery, changed as `view` says; closing either closes both. */
  with(view: ClientView): KubeClient {
    const headers = { ...this.headers, ...(view.userAgent ? { 'user-agent': view.userAgent } : {}) };
    const writeSignal = view.writeSignal ?? this.writeSignal;
    return new KubeClient(
      this.server,
      this.dispatcher,
      headers,
      this.tokenFile,
      this.resources,
      writeSignal,
      this.connect,
    );
  }

  /**
   * This client on connections of its own (same credentials and discovery), so its requests never wait
   * behind the other's (admission behind a controller's pass); close it apart.
   */
  withOwnConnections(): KubeClient {
    if (!this.connect) throw new Error('this client cannot open connections of its own');
    return new KubeClient(
      this.server,
      this.connect(),
      this.headers,
      this.tokenFile,
      this.resources,
      this.writeSignal,
      this.connect,
    );
  }

  static async fromKubeconfigFile(path: string): Promise<KubeClient> {
    const access = readKubeconfig(path);
    if (access) return KubeClient.fromAccess(access);
    const kc = new (await import('@kubernetes/client-node')).KubeConfig();
    kc.loadFromFile(path);
    return KubeClient.fromKubeConfig(kc, kubeconfigTokenFile(path, kc.getCurrentUser()?.name));
  }

  /** $KUBECONFIG / ~/.kube/config, else the in-cluster service account when running in a Pod. */
  static async fromDefault(): Promise<KubeClient> {
    const access = defaultAccess();
    if (access) return KubeClient.fromAccess(access);
    const kc = new (await import('@kubernetes/client-node')).KubeConfig();
    kc.loadFromDefault();
    const user = kc.getCurrentUser()?.name;
    const file = process.env.KUBECONFIG?.split(delimiter)[0] || join(homedir(), '.kube', 'config');
    const tokenFile =
      user !== 'inClusterUser' && existsSync(file) ? kubeconfigTokenFile(file, user) : undefined;
    return KubeClient.fromKubeConfig(kc, tokenFile);
  }

  /** `tokenFile` overrides the user's credentials; in a Pod the ServiceAccount token file is used. */
  static async fromKubeConfig(kc: KubeConfig, tokenFile?: string): Promise<KubeClient> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig names no current cluster');
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    const inCluster = kc.getCurrentUser()?.authProvider?.config?.tokenFile as string | undefined;
    const path = tokenFile ?? inCluster;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (typeof v !== 'string' || (path && k.toLowerCase() === 'authorization')) continue;
      headers[k] = v;
    }
    const connect = () =>
      new Agent({
        connect: {
          ca: opts.ca as string | undefined,
          cert: opts.cert as string | undefined,
          key: opts.key as string | undefined,
          rejectUnauthorized: !cluster.skipTLSVerify,
        },
        keepAliveTimeout: 30_000,
        connections: 32,
      });
    const tokens = path ? new TokenFile(path) : undefined;
    return new KubeClient(cluster.server, connect(), headers, tokens, undefined, undefined, connect);
  }

  /** A client for a server and credentials read without client-node (kubeconfig.ts). */
  static fromAccess(access: ClusterAccess): KubeClient {
    const connect = () =>
      new Agent({
        connect: {
          ca: access.ca,
          cert: access.cert,
          key: access.key,
          rejectUnauthorized: !access.skipTLSVerify,
        },
        keepAliveTimeout: 30_000,
        connections: 32,
      });
    const headers: Record<string, string> =
      access.token && !access.tokenFile ? { authorization: `Bearer ${access.token}` } : {};
    const tokenFile = access.tokenFile ? new TokenFile(access.tokenFile) : undefined;
    return new KubeClient(access.server, connect(), headers, tokenFile, undefined, undefined, connect);
  }

  /** Performs one request and returns the decoded JSON body; non-2xx statuses throw ApiError. */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, path, options);
    const text = await res.body.text();
    if (res.statusCode >= 300) throw ApiError.fromResponse(res.statusCode, text, `${method} ${path}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Opens a request and hands back the raw response (for watch streams). */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Dispatcher.ResponseData> {
    const res = await this.sendOnce(method, path, options);
    if (res.statusCode !== 401 || !this.tokenFile) return res;
    // The token was refused (rotated and the old one revoked): read the file again and retry once.
    await res.body.dump();
    this.tokenFile.invalidate();
    return this.sendOnce(method, path, options);
  }

  private async sendOnce(method: string, path: string, options: RequestOptions) {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(options.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { ...this.headers, accept: 'application/json' };
    if (this.tokenFile) headers.authorization = `Bearer ${await this.tokenFile.current()}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] = options.contentType ?? 'application/json';
    }
    const term = method === 'GET' ? undefined : this.writeSignal?.();
    term?.throwIfAborted();
    const signal =
      term && options.signal ? AbortSignal.any([term, options.signal]) : (term ?? options.signal);
    if (method !== 'GET') apiWrites.inc({ verb: method });
    const timeout = options.timeoutMs ?? 30_000;
    const started = performance.now();
    // client-go's labels: the method and status code per request, and a watch's latency as WATCH.
    const host = url.host;
    try {
      const res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        dispatcher: this.dispatcher,
        signal,
        headersTimeout: timeout || 0,
        bodyTimeout: timeout || 0,
      });
      restClientRequests.inc({ code: String(res.statusCode), method, host });
      restClientRequestDuration.observe(
        { verb: options.query?.watch ? 'WATCH' : method, host },
        (performance.now() - started) / 1000,
      );
      return res;
    } catch (err) {
      restClientRequests.inc({ code: '<error>', method, host });
      throw err;
    }
  }

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T> {
    return this.request<T>('GET', await this.resources.objectPath(ref));
  }

  /** Like get, but NotFound yields undefined. */
  async find<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined> {
    try {
      return await this.get<T>(ref);
    } catch (err) {
      if (err instanceof ApiError && err.isNotFound) return undefined;
      throw err;
    }
  }

  async list<T extends KubeObject = KubeObject>(
    ref: Omit<ObjectRef, 'name'>,
    query: { labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<ObjectList<T>> {
    return this.request<ObjectList<T>>('GET', await this.resources.collectionPath(ref), { query });
  }

  /** Creates; with dryRun the apiserver admits and validates the object but stores nothing. */
  async create<T extends KubeObject>(obj: T, options: { dryRun?: boolean } = {}): Promise<T> {
    return this.request<T>(
      'POST',
      await this.resources.collectionPath({ ...refOf(obj), namespace: obj.metadata.namespace ?? 'default' }),
      { body: obj, ...(options.dryRun ? { query: { dryRun: 'All' } } : {}) },
    );
  }

  async replace<T extends KubeObject>(obj: T, subresource?: 'status'): Promise<T> {
    return this.request<T>('PUT', await this.resources.objectPath(refOf(obj), subresource), { body: obj });
  }

  /** Server-side apply: the object is this manager's whole intent for the fields it names. */
  async apply<T extends KubeObject>(obj: KubeObject, options: ApplyOptions): Promise<T> {
    return this.request<T>('PATCH', await this.resources.objectPath(refOf(obj), options.subresource), {
      body: obj,
      contentType: 'application/apply-patch+yaml',
      query: {
        fieldManager: options.fieldManager,
        force: options.force ?? true,
      },
    });
  }

  async mergePatch<T extends KubeObject>(ref: ObjectRef, patch: unknown, subresource?: 'status'): Promise<T> {
    return this.request<T>('PATCH', await this.resources.objectPath(ref, subresource), {
      body: patch,
      contentType: 'application/merge-patch+json',
    });
  }

  async jsonPatch<T extends KubeObject>(ref: ObjectRef, ops: unknown[], subresource?: 'status'): Promise<T> {
    return this.request<T>('PATCH', await this.resources.objectPath(ref, subresource), {
      body: ops,
      contentType: 'application/json-patch+json',
    });
  }

  /** Deletes; NotFound counts as done. Returns whether the object existed. */
  async delete(
    ref: ObjectRef,
    options: {
      propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
      /** Deleted only while the object still has this uid and resourceVersion (else 409 Conflict). */
      preconditions?: { uid?: string; resourceVersion?: string };
    } = {},
  ) {
    const body = {
      ...(options.propagationPolicy ? { propagationPolicy: options.propagationPolicy } : {}),
      ...(options.preconditions ? { preconditions: options.preconditions } : {}),
    };
    try {
      await this.request('DELETE', await this.resources.objectPath(ref), {
        body: Object.keys(body).length ? body : undefined,
      });
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.isNotFound) return false;
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

/** The `token-file` a kubeconfig names for `user` (relative to the kubeconfig), to be read as it changes. */
export function kubeconfigTokenFile(kubeconfig: string, user: string | undefined): string | undefined {
  const doc = parse(readFileSync(kubeconfig, 'utf8')) as {
    users?: { name?: string; user?: Record<string, unknown> }[];
  } | null;
  const file = doc?.users?.find((u) => u.name === user)?.user?.['token-file'];
  return typeof file === 'string' && file ? resolve(dirname(kubeconfig), file) : undefined;
}

export function refOf(obj: KubeObject): ObjectRef {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name ?? '',
    namespace: obj.metadata.namespace,
  };
}
