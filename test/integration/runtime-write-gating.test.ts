// Every write the operator makes is the leader's. A replica that does not lead serves admission with
// the certificate the leader wrote, but never writes the certificate Secret or the webhook
// configurations' CA bundle, even when both are emptied; once it leads, it writes them. (Controllers
// start only on the leader: runtime-leader-election.test.ts.)

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import { awaitAdmissionInForce } from '../../local/admission-in-force.ts';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { validatingConfigurationName } from '../../src/webhooks/configuration.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'gpustack-system';
const leaseName = 'kvpool-operator';
const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'kvpool-webhook-certs' };
const configRef = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  name: validatingConfigurationName,
};
type Configuration = KubeObject & { webhooks: { clientConfig: { caBundle?: string } }[] };

describe('writes gated by leadership', () => {
  let cluster: IsolatedCluster;
  let admin: KubeClient;
  let leader: InProcessOperator | undefined;
  let standby: InProcessOperator | undefined;

  const lease = async () =>
    (
      await admin.find<KubeObject<Lease>>({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: ns,
        name: leaseName,
      })
    )?.spec;
  const holder = async () => (await lease())?.holderIdentity;
  // A Lease that outlives a loaded machine's stalls: with a short one, a leader that missed its renew
  // deadline lost it to the other replica, which then wrote both as the leader it had become. The
  // hand-over at the end is a graceful release, which a standby takes at once.
  const election = { leaseName, leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 2_000 };
  const caBundles = async () =>
    (await admin.get<Configuration>(configRef)).webhooks.map((w) => w.clientConfig.caBundle ?? '');

  before(async () => {
    cluster = await startIsolatedCluster();
    admin = cluster.client;
  });
  after(async () => {
    await standby?.stop();
    await leader?.stop();
    await cluster?.stop();
  });

  it('a replica that does not lead serves the leader’s certificate and writes neither it nor the CA bundle', async () => {
    // The leader re-reads its certificate only hourly: nothing it does can mask the standby's writes.
    leader = await startOperatorInProcess(cluster.cp.kubeconfigPath, {
      webhooks: true,
      identity: 'replica-a',
      leaderElection: election,
      certificateRefreshMs: 3_600_000,
    });
    await waitFor(async () => ((await holder()) === 'replica-a' ? true : undefined), {
      what: 'replica-a to lead',
    });
    await awaitAdmissionInForce(admin, 30_000);
    const secretData = async () =>
      (await admin.get<KubeObject & { data?: Record<string, string> }>(secretRef)).data ?? {};
    assert.ok((await secretData())['tls.crt'], 'the leader wrote the certificate');

    standby = await startOperatorInProcess(cluster.cp.kubeconfigPath, {
      webhooks: true,
      installWebhookConfigurations: false,
      identity: 'replica-b',
      leaderElection: election,
      certificateRefreshMs: 100,
    });
    const serving = standby.manager.webhooks!;
    await waitFor(() => (serving.serving ? true : undefined), {
      what: 'the standby to serve the leader’s certificate',
    });
    assert.equal(await holder(), 'replica-a');
    const transitions = (await lease())?.leaseTransitions;

    // The installation's empty Secret again, and no CA bundle: what a replica that may write would fix.
    const secret = await admin.get<KubeObject & { data?: Record<string, string> }>(secretRef);
    await admin.replace({ ...secret, data: {} });
    await admin.jsonPatch(
      configRef,
      (await caBundles()).map((_, i) => ({
        op: 'replace',
        path: `/webhooks/${i}/clientConfig/caBundle`,
        value: '',
      })),
    );
    const looked = serving.refreshes;
    await waitFor(() => (serving.refreshes >= looked + 5 ? true : undefined), {
      what: 'the standby to look at the Secret five more times',
    });
    // Were the Lease to change hands, the standby would be the leader and its writes legitimate.
    const held = await lease();
    assert.equal(held?.holderIdentity, 'replica-a', 'replica-a led throughout');
    assert.equal(held?.leaseTransitions, transitions, 'the Lease never changed hands');
    assert.deepEqual(await secretData(), {}, 'the standby did not write the Secret');
    assert.ok(
      (await caBundles()).every((b) => b === ''),
      'the standby did not set the CA bundle',
    );
    assert.ok(serving.serving, 'it keeps serving the certificate it loaded');

    // The same replica writes both once it leads.
    await leader.stop();
    leader = undefined;
    await waitFor(async () => ((await holder()) === 'replica-b' ? true : undefined), {
      what: 'replica-b to lead',
    });
    await waitFor(async () => ((await secretData())['tls.crt'] ? true : undefined), {
      what: 'the new leader to write the Secret',
    });
    await waitFor(async () => ((await caBundles()).every((b) => b !== '') ? true : undefined), {
      what: 'the new leader to set the CA bundle',
    });
  });
});
