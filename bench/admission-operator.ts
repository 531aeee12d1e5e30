// The operator of the admission bench, in its own process (so the load generator does not share its
// event loop): the chart's account, webhooks on a loopback port, health and /metrics on another, no
// leader election. The bench applies and removes the webhook configurations itself.
import { KubeClient } from '../src/kube/client.ts';
import { startOperator } from '../src/kvpool/start-operator.ts';
import { accountKubeconfig, installOperatorAccess } from '../test/support/operator-access.ts';

const [adminKubeconfig, namespace, webhookPort, healthPort] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];
const admin = await KubeClient.fromKubeconfigFile(adminKubeconfig);
await installOperatorAccess(admin, namespace);
const account = await accountKubeconfig(admin, adminKubeconfig, namespace);
const client = await KubeClient.fromKubeconfigFile(account.path);
const operator = await startOperator({
  client,
  namespace,
  identity: 'bench',
  healthPort: Number(healthPort),
  webhook: {
    port: Number(webhookPort),
    host: '127.0.0.1',
    reach: { url: `https://127.0.0.1:${webhookPort}` },
    hosts: ['127.0.0.1'],
  },
});
process.on('message', async (msg: { type: string }) => {
  if (msg.type !== 'stop') return;
  await operator.stop();
  await client.close();
  await admin.close();
  account.remove();
  process.exit(0);
});
process.send!({ ready: true });
