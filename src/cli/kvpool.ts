// The `kvpool` command.
import { runManifests } from './manifests.ts';

const usage = `usage: kvpool <command>
  manifests [--check]   write (or check) the generated CRDs, chart files and deploy/install.yaml
  local [--nodes N] [--root DIR]
                        run the local cluster (real nodes, the operator) until Ctrl-C
  operator [flags]      run the operator (see src/cli/operator.ts for flags)
  uninstall --namespace NS --deployment NAME
                        release kvpool's objects before the chart is uninstalled (its pre-delete hook)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'manifests':
      return runManifests(args);
    case 'local': {
      const { runLocal } = await import('./local.ts');
      return runLocal(args);
    }
    case 'uninstall': {
      const { runUninstall } = await import('./uninstall.ts');
      return runUninstall(args);
    }
    case 'operator': {
      const { runOperator } = await import('./operator.ts');
      return runOperator(args);
    }
    default:
      console.error(usage);
      return command ? 2 : 0;
  }
}

process.exitCode = await main(process.argv.slice(2));
