// The Helm CLI against one cluster, with its own cache, config and data directories (nothing of the
// user's Helm set-up is read or written).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../images/toolchain.ts';
import { helmBinary } from './toolchain.ts';

export const chartDir = join(projectRoot, 'charts', 'kvpool');

export class Helm {
  private readonly env: NodeJS.ProcessEnv;

  /** `home` holds Helm's own files; `kubeconfig` names the cluster. */
  constructor(kubeconfig: string, home: string) {
    this.env = {
      ...process.env,
      KUBECONFIG: kubeconfig,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    };
  }

  /** Runs helm; rejects with its stderr when it fails. */
  async run(args: string[], major: 3 | 4 = 3): Promise<string> {
    try {
      return (await promisify(execFile)(helmBinary(major), args, { env: this.env, maxBuffer: 16 << 20 }))
        .stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`helm ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
    }
  }
}
