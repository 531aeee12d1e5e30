// The `kvpool` command: what the operator image runs.
const usage = `usage: kvpool <command>
  operator [flags]      run the operator (see src/kvpool/operator.ts for flags)
  uninstall --namespace NS --deployment NAME
                        release kvpool's objects before the chart is uninstalled (its pre-delete hook)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
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
