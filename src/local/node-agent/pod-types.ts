// The parts of core/v1 Pod, ConfigMap, Secret and Node the node agent reads and writes, as the API
// serves them in JSON.
import type { KubeObject } from '../../kube/object.ts';

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface ObjectFieldSelector {
  fieldPath: string;
  apiVersion?: string;
}

export interface ResourceFieldSelector {
  resource: string;
  containerName?: string;
  divisor?: string | number;
}

export interface EnvVarSource {
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  configMapKeyRef?: { name: string; key: string; optional?: boolean };
  secretKeyRef?: { name: string; key: string; optional?: boolean };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
}

export interface HttpGetAction {
  path?: string;
  port: number | string;
  host?: string;
  scheme?: 'HTTP' | 'HTTPS';
  httpHeaders?: { name: string; value: string }[];
}

export interface Handler {
  exec?: { command?: string[] };
  httpGet?: HttpGetAction;
  tcpSocket?: { port: number | string; host?: string };
  grpc?: { port: number; service?: string };
  sleep?: { seconds: number };
}

export interface Probe extends Handler {
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  fsGroup?: number;
  supplementalGroups?: number[];
}

export interface ResourceRequirements {
  limits?: Record<string, string | number>;
  requests?: Record<string, string | number>;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { postStart?: Handler; preStop?: Handler };
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  securityContext?: SecurityContext;
  /** `Always` on an init container makes it a sidecar. */
  restartPolicy?: 'Always';
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  hostPath?: { path: string; type?: string };
  configMap?: { name: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  downwardAPI?: { items?: DownwardItem[]; defaultMode?: number };
  projected?: { sources?: ProjectedSource[]; defaultMode?: number };
}

export interface DownwardItem {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

export interface ProjectedSource {
  serviceAccountToken?: { audience?: string; expirationSeconds?: number; path: string };
  configMap?: { name: string; items?: KeyToPath[]; optional?: boolean };
  secret?: { name: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items?: DownwardItem[] };
}

export interface PodSpec {
  nodeName?: string;
  hostNetwork?: boolean;
  hostname?: string;
  subdomain?: string;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  securityContext?: SecurityContext;
  initContainers?: Container[];
  containers: Container[];
  volumes?: Volume[];
  readinessGates?: { conditionType: string }[];
}

export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}

export interface ContainerStateRunning {
  startedAt?: string;
}

export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}

export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  started?: boolean;
  restartCount: number;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface PodStatus {
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  qosClass?: string;
  nominatedNodeName?: string;
}

export type Pod = KubeObject & {
  metadata: { deletionGracePeriodSeconds?: number };
  spec: PodSpec;
  status?: PodStatus;
};

export type ConfigMap = KubeObject & { data?: Record<string, string>; binaryData?: Record<string, string> };

export type Secret = KubeObject & { data?: Record<string, string>; stringData?: Record<string, string> };
