// Installs (or updates) this project's CRDs by server-side apply and waits until each is Established.
import type { CustomResourceDefinition } from 'kubernetes-types/apiextensions/v1.js';
import { renderAllCrds } from '../src/api/crd.ts';
import type { KubeClient, KubeObject } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';

export async function installCrds(client: KubeClient, timeoutMs = 30_000): Promise<void> {
  const crds = renderAllCrds().map(({ crd }) => crd);
  // CRDs go as raw JSON: a model round-trip can drop schema extensions such as int-or-string.
  await Promise.all(crds.map((crd) => client.apply(crd, { fieldManager: 'kvpool-installer' })));
  for (const crd of crds) {
    const name = crd.metadata.name!;
    await waitFor(
      async () => {
        const got = await client.get<KubeObject<CustomResourceDefinition>>({
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          name,
        });
        return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
          ? true
          : undefined;
      },
      { what: `CRD ${name} to be Established`, timeoutMs },
    );
  }
}
