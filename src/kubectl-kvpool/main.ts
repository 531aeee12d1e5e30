// `kubectl kvpool`: the kubectl plugin (an executable named kubectl-kvpool on the PATH; bin/ has the
// launcher). It reads the cluster with the caller's own credentials and prints what the operator
// derived from the store (status), what the walkthrough's troubleshooting table finds (doctor), and
// what each store reports now (top), as text for people or JSON for scripts.
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, kubeconfigTokenFile } from '../kube/client.ts';
import { doctor } from './doctor.ts';
import { renderDoctor } from './render-doctor.ts';
import { renderStatus } from './render-status.ts';
import { renderTop } from './render-top.ts';
import { readSnapshot } from './snapshot.ts';
import { statusModel } from './status-model.ts';
import { scrapeStores } from './store-scrape.ts';
import { topModel } from './top-model.ts';

const usage = `usage: kubectl kvpool <command> [-o json] [--kubeconfig FILE] [--context NAME]

  status   every backend → pools → Bindings → ModelDeployments: phase, capacity, each Binding's
           ceiling, grant and usage, the members per node, the elected leader, and what is wrong
  doctor   the walkthrough's troubleshooting table checked against the cluster: each finding with
           its evidence and its fix; exits 1 when something is wrong
  top      what each store reports now: capacity, lookups, hits and misses, per-domain usage and grant

  -o, --output json   for scripts (exact byte counts as strings; absent figures are left out)`;

async function connect(kubeconfig?: string, context?: string): Promise<KubeClient> {
  if (!kubeconfig && !context) return KubeClient.fromDefault();
  const kc = new KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  if (context) kc.setCurrentContext(context);
  const file = kubeconfig ?? process.env.KUBECONFIG?.split(':')[0];
  return KubeClient.fromKubeConfig(
    kc,
    file ? kubeconfigTokenFile(file, kc.getCurrentUser()?.name) : undefined,
  );
}

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${usage}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help || !command) {
    console.log(usage);
    return values.help ? 0 : 2;
  }
  if (!['status', 'doctor', 'top'].includes(command) || positionals.length > 1) {
    console.error(`unknown command "${positionals.join(' ')}"\n\n${usage}`);
    return 2;
  }
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json') {
    console.error(`-o ${output}: the output is json, or text when -o is left out`);
    return 2;
  }
  const client = await connect(values.kubeconfig, values.context);
  try {
    const snapshot = await readSnapshot(client);
    const print = (data: unknown, text: () => string) =>
      process.stdout.write(output === 'json' ? `${JSON.stringify(data, null, 2)}\n` : text());
    if (command === 'status') {
      const model = statusModel(snapshot);
      print(model, () => renderStatus(model));
      return 0;
    }
    if (command === 'doctor') {
      const report = doctor(snapshot);
      print(report, () => renderDoctor(report));
      return report.healthy ? 0 : 1;
    }
    const top = topModel(snapshot, await scrapeStores(client, snapshot));
    print(top, () => renderTop(top));
    return top.some((t) => t.error) ? 1 : 0;
  } catch (err) {
    console.error(`kubectl kvpool ${command}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    await client.close();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      output: { type: 'string', short: 'o' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

process.exitCode = await main(process.argv.slice(2));
