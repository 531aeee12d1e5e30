// The engine image a role runs when it names none (decision 20): the published runner tag
// `gpustack/runner:<backend><runtimeVersion>-<engine><version>`, e.g. `gpustack/runner:cuda12.9-vllm0.29.0`.
// The backend comes from the InstanceType's manufacturer, the runtime version from the lowest
// `acceleratable.feature.gpustack.ai/<manufacturer>.runtime-version` label on the InstanceType's nodes.
// An InstanceType without an accelerator runs the CPU runner, `gpustack/runner:cpu-<engine><version>`
// (docs/decisions/0030-cpu-runner-images.md).
// Where no tag can be formed, the error names the image fields. Pure.
import type { ModelDeploymentRole } from '../api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../api/types.ts';
import type { KubeObject } from '../kube/object.ts';

export const runnerRepository = 'gpustack/runner';

const backends: Record<string, string> = {
  nvidia: 'cuda',
  ascend: 'cann',
  amd: 'rocm',
  metax: 'maca',
  mthreads: 'musa',
  iluvatar: 'corex',
  hygon: 'dtk',
  thead: 'hggc',
};

const featurePrefix = 'acceleratable.feature.gpustack.ai/';

/** The label that marks a node of an accelerator group (an InstanceType's pool). */
export const acceleratorGroupLabel = (group: string) => `${featurePrefix}${group}`;
/** The label a node's accelerator runtime version is published under. */
export const runtimeVersionLabel = (manufacturer: string) =>
  `${featurePrefix}${manufacturer}.runtime-version`;
/** Whether a label is one the default image is formed from (node events that matter). */
export const isAcceleratorLabel = (key: string) => key.startsWith(featurePrefix);

/** Versions compared part by part as numbers (`12.10` after `12.9`). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/);
  const pb = b.split(/[.-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? '';
    const y = pb[i] ?? '';
    const nx = Number(x);
    const ny = Number(y);
    const d =
      Number.isInteger(nx) && Number.isInteger(ny) && x !== '' && y !== ''
        ? nx - ny
        : x < y
          ? -1
          : x > y
            ? 1
            : 0;
    if (d !== 0) return d;
  }
  return 0;
}

/** The distinct runtime versions the InstanceType's nodes report, lowest first. */
export function poolRuntimeVersions(type: InstanceType, nodes: KubeObject[]): string[] {
  const group = type.spec.acceleratorGroup;
  const maker = type.spec.manufacturer?.toLowerCase();
  if (!group || !maker) return [];
  const versions = new Set<string>();
  for (const n of nodes) {
    const labels = n.metadata.labels ?? {};
    const v = labels[runtimeVersionLabel(maker)];
    if (labels[acceleratorGroupLabel(group)] === 'true' && v) versions.add(v);
  }
  return [...versions].sort(compareVersions);
}

/** The role's image: its own, the engine's, or the runner tag; throws naming the image fields. */
export function engineImage(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  type: InstanceType,
  runtimeVersion: string | undefined,
): string {
  const explicit = role.image ?? md.spec.engine.image;
  if (explicit) return explicit;
  const setImage = `set spec.roles[].image (role ${role.name}) or spec.engine.image`;
  const version = md.spec.engine.version;
  if (!version)
    throw new Error(
      `role ${role.name} has no image and spec.engine.version is unset; set spec.engine.version (for example 0.29.0) or an image`,
    );
  const engine = md.spec.engine.name === 'SGLang' ? 'sglang' : 'vllm';
  if (!type.spec.acceleratable) return `${runnerRepository}:cpu-${engine}${version}`;
  const maker = type.spec.manufacturer?.toLowerCase();
  if (!maker)
    throw new Error(
      `role ${role.name}: InstanceType ${type.metadata.name} is acceleratable but names no spec.manufacturer, so no ${runnerRepository} tag can be formed; set its manufacturer, or ${setImage}`,
    );
  const backend = backends[maker];
  if (!backend)
    throw new Error(
      `role ${role.name}: ${runnerRepository} publishes no image for manufacturer ${maker} (InstanceType ${type.metadata.name}); ${setImage}`,
    );
  if (!runtimeVersion)
    throw new Error(
      `role ${role.name}: no node of InstanceType ${type.metadata.name} (label ${acceleratorGroupLabel(type.spec.acceleratorGroup ?? '<group>')}=true) reports ${runtimeVersionLabel(maker)}, so no ${runnerRepository} tag can be formed; label the nodes, or ${setImage}`,
    );
  return `${runnerRepository}:${backend}${runtimeVersion}-${engine}${version}`;
}

/** Whether admission can already tell that no runner tag will ever exist for this role's InstanceType. */
export function runnerImageRefusal(type: InstanceType): string | undefined {
  if (!type.spec.acceleratable) return undefined;
  const maker = type.spec.manufacturer?.toLowerCase();
  if (!maker) return `InstanceType ${type.metadata.name} is acceleratable but names no spec.manufacturer`;
  if (!backends[maker])
    return `${runnerRepository} publishes no image for manufacturer ${maker} (InstanceType ${type.metadata.name})`;
  return undefined;
}
