// `npm run manifests` (node scripts/manifests.ts [--check]): writes (or, with --check, fails when the committed files differ from)
// every generated file: deploy/crds from the schemas, the chart's CRDs and webhook configurations
// (chart-files.ts), the Settings table in the chart's README (src/api/setting.ts),
// docs/api-reference.md (api-reference.ts), and the non-Helm install, the chart
// rendered by `helm template` into deploy/namespace.yaml, deploy/crds.yaml and deploy/install.yaml.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../images/toolchain.ts';
import { helmBinary } from '../local/toolchain.ts';
import { renderApiReference } from './api-reference.ts';
import { chartCrdFiles, crdFiles, webhookConfigurationTemplate, withSettingsTable } from './chart-files.ts';

export const crdDir = join(projectRoot, 'deploy', 'crds');
export const chartDir = join(projectRoot, 'charts', 'kvpool');
/** The non-Helm install, in the order `kubectl apply` takes them: what outlives an uninstall, then the operator. */
export const namespaceYamlPath = join(projectRoot, 'deploy', 'namespace.yaml');
export const crdsYamlPath = join(projectRoot, 'deploy', 'crds.yaml');
export const installYamlPath = join(projectRoot, 'deploy', 'install.yaml');
export const installFilePaths = [namespaceYamlPath, crdsYamlPath, installYamlPath];
/** The namespace the non-Helm install installs into: the walkthrough's. */
export const installNamespace = 'gpustack-system';

/** Folders whose YAML files are all generated: a file no longer generated is stale too. */
const generatedDirs = ['deploy/crds', 'charts/kvpool/crds', 'charts/kvpool/files/crds'];

/** Every file generated from the code, by path relative to the project root. */
export function generatedSourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, text] of crdFiles()) files.set(`deploy/crds/${name}`, text);
  for (const [path, text] of chartCrdFiles()) files.set(`charts/kvpool/${path}`, text);
  files.set('charts/kvpool/templates/webhook-configurations.yaml', webhookConfigurationTemplate());
  files.set('docs/api-reference.md', renderApiReference());
  const readme = 'charts/kvpool/README.md';
  files.set(readme, withSettingsTable(readFileSync(join(projectRoot, readme), 'utf8')));
  return files;
}

/** `helm template` of the chart as committed, with `args` (values) added. */
export function helmTemplate(args: string[], major: 3 | 4 = 3): string {
  return execFileSync(helmBinary(major), ['template', 'kvpool', chartDir, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** The documented non-Helm install and the step of its uninstall that follows `kvpool uninstall`. */
export const installCommand =
  'kubectl apply --server-side -f deploy/namespace.yaml -f deploy/crds.yaml -f deploy/install.yaml';
export const uninstallCommand = 'kubectl delete --ignore-not-found -f deploy/install.yaml';

/** What each install file says about itself, above the chart's objects it holds. */
const installFileHeaders: Record<'namespace' | 'crds' | 'install', string[]> = {
  namespace: [
    `The namespace the operator and the stores run in (${installNamespace}), labelled for Pod Security.`,
    'The uninstall keeps it: deleting it deletes every store running in it.',
  ],
  crds: [
    'Every kvpool CRD. The uninstall keeps them: deleting a CRD deletes every object of its kind, so',
    'deleting this file deletes every backend (and its store), pool, Binding, ModelDeployment (and its',
    "engines), Setting and InstanceType. Do that only to remove kvpool's objects for good.",
  ],
  install: [
    'The operator and nothing that must outlive it: its account, RBAC and admission policy, Deployment,',
    'disruption budget, Services, webhook configurations and certificate Secret, and the store-metrics',
    'NetworkPolicy.',
    `Uninstall: \`kvpool uninstall\` (charts/kvpool/README.md), then ${uninstallCommand}`,
  ],
};

/**
 * deploy/namespace.yaml, deploy/crds.yaml and deploy/install.yaml: the chart with its defaults in the
 * walkthrough's namespace, split so that the uninstall (`kubectl delete -f deploy/install.yaml`)
 * deletes only the operator's own objects, never the CRDs or the namespace, and so never a backend,
 * its store, or anything else of the users'. Setting objects are left out: `kubectl apply` cannot
 * create objects of a CRD it installs in the same run, and absent Settings take the very defaults the
 * chart would write. So is the uninstall hook: without Helm, removing kvpool starts with `kvpool
 * uninstall` (see charts/kvpool/README.md).
 */
export function renderInstallFiles(): Map<string, string> {
  const rendered = helmTemplate([
    '--namespace',
    installNamespace,
    '--include-crds',
    // Hooks are Helm's: a pre-delete hook applied with kubectl would run at once.
    '--no-hooks',
    '--set',
    'settings.create=false',
  ]);
  const parts: Record<keyof typeof installFileHeaders, string[]> = { namespace: [], crds: [], install: [] };
  // Helm separates documents with a line `---`; a block scalar's lines are indented, never one.
  for (const doc of rendered.split(/^---\n/m)) {
    const kind = (parse(doc) as { kind?: string } | null)?.kind;
    if (!kind) continue;
    const part =
      kind === 'Namespace' ? 'namespace' : kind === 'CustomResourceDefinition' ? 'crds' : 'install';
    parts[part].push(`---\n${doc}`);
  }
  const header = (part: keyof typeof installFileHeaders) =>
    [
      `Generated by \`npm run manifests\` from charts/kvpool (default values, namespace ${installNamespace},`,
      'no Setting objects: absent Settings take their defaults); do not edit.',
      ...installFileHeaders[part],
      `Install: ${installCommand}`,
    ]
      .map((l) => `# ${l}\n`)
      .join('');
  return new Map([
    [namespaceYamlPath, header('namespace') + parts.namespace.join('')],
    [crdsYamlPath, header('crds') + parts.crds.join('')],
    [installYamlPath, header('install') + parts.install.join('')],
  ]);
}

/** The same files by path relative to the project root. */
const relative = (files: Map<string, string>) =>
  new Map([...files].map(([path, text]) => [path.slice(projectRoot.length + 1), text]));

function staleFiles(expected: Map<string, string>, dirs: string[]): string[] {
  const stale: string[] = [];
  for (const [path, text] of expected) {
    const full = join(projectRoot, path);
    if (!existsSync(full) || readFileSync(full, 'utf8') !== text) stale.push(path);
  }
  for (const dir of dirs) {
    const full = join(projectRoot, dir);
    if (!existsSync(full)) continue;
    for (const f of readdirSync(full).filter((n) => n.endsWith('.yaml'))) {
      if (!expected.has(`${dir}/${f}`)) stale.push(`${dir}/${f} (no longer generated)`);
    }
  }
  return stale;
}

export function runManifests(args: string[]): number {
  const sources = generatedSourceFiles();
  if (args.includes('--check')) {
    const stale = staleFiles(sources, generatedDirs);
    // The chart is rendered only once its generated files are current.
    if (stale.length === 0) stale.push(...staleFiles(relative(renderInstallFiles()), []));
    if (stale.length) {
      console.error(
        `generated manifests are stale (${stale.join(', ')}): run \`npm run manifests\` and commit the result`,
      );
      return 1;
    }
    return 0;
  }
  for (const [path, text] of sources) {
    mkdirSync(dirname(join(projectRoot, path)), { recursive: true });
    writeFileSync(join(projectRoot, path), text);
  }
  for (const [path, text] of renderInstallFiles()) writeFileSync(path, text);
  console.error(
    `wrote ${sources.size} generated files and the install files (deploy/namespace.yaml, crds.yaml, install.yaml)`,
  );
  return 0;
}

if (import.meta.main) process.exitCode = runManifests(process.argv.slice(2));
