// The operator's account exactly as the chart installs it (ServiceAccount, ClusterRole, Role and their
// bindings, the admission policy bounding it, from the non-Helm install files or the chart rendered for
// another namespace), and a kubeconfig
// that authenticates as that account with a TokenRequest token kept in a file, so an operator run in a
// test process has the chart's permissions and no more.
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { helmTemplate, installFilePaths, installNamespace } from '../../scripts/manifests.ts';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';

export const operatorAccount = 'kvpool-operator';
const accessKinds = new Set([
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  // The (empty) webhook certificate Secret: the operator may update it, not create one.
  'Secret',
  // What the account may write, narrower than RBAC.
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

/** Every object the chart installs into `namespace` with its default values. */
export function chartObjects(namespace = installNamespace): KubeObject[] {
  const text =
    namespace === installNamespace
      ? installFilePaths.map((path) => readFileSync(path, 'utf8')).join('')
      : helmTemplate(['--namespace', namespace, '--include-crds']);
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => Boolean(o?.kind));
}

/** Applies the chart's namespace, ServiceAccount, RBAC and certificate Secret (as the cluster admin). */
export async function installOperatorAccess(admin: KubeClient, namespace = installNamespace): Promise<void> {
  for (const obj of chartObjects(namespace).filter((o) => accessKinds.has(o.kind))) {
    await admin.apply(obj, { fieldManager: 'kvpool-test' });
  }
}

export interface AccountKubeconfig {
  path: string;
  tokenFile: string;
  /** Writes a new token for the account into the token file, as the kubelet does when it rotates. */
  rotate(boundSecret?: { name: string; uid: string }): Promise<string>;
  remove(): void;
}

/** A TokenRequest token for `account`, optionally bound to a Secret (deleting it revokes the token). */
export async function requestToken(
  admin: KubeClient,
  namespace: string,
  account: string,
  boundSecret?: { name: string; uid: string },
): Promise<string> {
  const review = await admin.request<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`,
    {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          expirationSeconds: 3600,
          ...(boundSecret ? { boundObjectRef: { apiVersion: 'v1', kind: 'Secret', ...boundSecret } } : {}),
        },
      },
    },
  );
  return review.status.token;
}

/** A kubeconfig for `account` on the admin kubeconfig's cluster, its token in a `token-file`. */
export async function accountKubeconfig(
  admin: KubeClient,
  adminKubeconfig: string,
  namespace = installNamespace,
  account = operatorAccount,
): Promise<AccountKubeconfig> {
  const dir = mkdtempSync(join(tmpdir(), 'kvpool-account-'));
  const tokenFile = join(dir, 'token');
  const path = join(dir, 'kubeconfig');
  const rotate = async (boundSecret?: { name: string; uid: string }) => {
    const token = await requestToken(admin, namespace, account, boundSecret);
    // Replaced in one step, as the kubelet swaps a projected volume's files.
    writeFileSync(`${tokenFile}.new`, token, { mode: 0o600 });
    renameSync(`${tokenFile}.new`, tokenFile);
    return token;
  };
  await rotate();
  const adminConfig = parse(readFileSync(adminKubeconfig, 'utf8')) as {
    clusters: { name: string; cluster: Record<string, unknown> }[];
  };
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'kvpool', cluster: adminConfig.clusters[0]!.cluster }],
    users: [{ name: account, user: { 'token-file': tokenFile } }],
    contexts: [{ name: account, context: { cluster: 'kvpool', user: account, namespace } }],
    'current-context': account,
  };
  writeFileSync(path, stringify(kubeconfig), { mode: 0o600 });
  return { path, tokenFile, rotate, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
