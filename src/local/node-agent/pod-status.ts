// The Pod status a kubelet would report, derived from what the node agent knows about the Pod's
// sandbox and containers (pure; the status writer decides whether it differs from the stored one).
import type { ContainerStatus, Pod, PodCondition, PodStatus } from './pod-types.ts';

export interface PodObservation {
  pod: Pod;
  sandboxReady: boolean;
  podIP?: string;
  hostIP: string;
  startTime: string;
  init: (ContainerStatus & { sidecar: boolean })[];
  app: ContainerStatus[];
}

type Phase = NonNullable<PodStatus['phase']>;

/** The kubelet's phase rules (getPhase), for app containers once initialisation is judged. */
export function podPhase(o: PodObservation): Phase {
  const policy = o.pod.spec.restartPolicy ?? 'Always';
  for (const c of o.init) {
    const t = c.state.terminated;
    if (!c.sidecar && t && t.exitCode !== 0 && policy === 'Never') return 'Failed';
  }
  if (!initialized(o)) return 'Pending';
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of o.app) {
    if (c.state.running) running += 1;
    else if (c.state.terminated) {
      stopped += 1;
      if (c.state.terminated.exitCode === 0) succeeded += 1;
    } else if (c.lastState.terminated) {
      stopped += 1;
      if (c.lastState.terminated.exitCode === 0) succeeded += 1;
    } else waiting += 1;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    return policy === 'OnFailure' ? 'Running' : 'Failed';
  }
  return 'Pending';
}

function initialized(o: PodObservation): boolean {
  return o.init.every((c) => (c.sidecar ? c.started === true : c.state.terminated?.exitCode === 0));
}

function condition(
  previous: PodCondition[] | undefined,
  type: string,
  ok: boolean,
  now: string,
  reason?: string,
  message?: string,
): PodCondition {
  const status = ok ? 'True' : 'False';
  const before = previous?.find((c) => c.type === type);
  return {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime:
      before?.status === status && before.lastTransitionTime ? before.lastTransitionTime : now,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

type Verdict = readonly [] | readonly [reason: string, message?: string];

/** Why the Pod is not initialised, if it is not. */
function initializedVerdict(o: PodObservation): Verdict {
  const incomplete = o.init
    .filter((c) => (c.sidecar ? !c.started : c.state.terminated?.exitCode !== 0))
    .map((c) => c.name);
  if (!incomplete.length) return [];
  return ['ContainersNotInitialized', `containers with incomplete status: [${incomplete.join(' ')}]`];
}

/** Why the containers are not ready, if they are not (a finished Pod never is). */
function containersReadyVerdict(o: PodObservation, phase: Phase): Verdict {
  if (phase === 'Succeeded' || phase === 'Failed') return ['PodCompleted'];
  const unready = [...o.init.filter((c) => c.sidecar), ...o.app].filter((c) => !c.ready).map((c) => c.name);
  if (!unready.length) return [];
  return ['ContainersNotReady', `containers with unready status: [${unready.join(' ')}]`];
}

/** Why the Pod is not ready: its containers, or a readiness gate whose condition is not True. */
function readyVerdict(o: PodObservation, containers: Verdict): Verdict {
  if (containers.length) return containers;
  const gate = (o.pod.spec.readinessGates ?? []).find(
    (g) => !o.pod.status?.conditions?.some((c) => c.type === g.conditionType && c.status === 'True'),
  );
  if (!gate) return [];
  return [
    'ReadinessGatesNotReady',
    `corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`,
  ];
}

export function derivePodStatus(o: PodObservation, now: string): PodStatus {
  const previous = o.pod.status ?? {};
  const prev = previous.conditions;
  const phase = podPhase(o);
  const initialized = initializedVerdict(o);
  const containersReady = containersReadyVerdict(o, phase);
  const ready = readyVerdict(o, containersReady);
  const conditions: PodCondition[] = [
    condition(prev, 'PodReadyToStartContainers', o.sandboxReady, now),
    condition(prev, 'Initialized', !initialized.length, now, ...initialized),
    condition(prev, 'Ready', !ready.length, now, ...ready),
    condition(prev, 'ContainersReady', !containersReady.length, now, ...containersReady),
    prev?.find((c) => c.type === 'PodScheduled') ?? condition(prev, 'PodScheduled', true, now),
  ];
  // Conditions other writers own (readiness gates, DisruptionTarget) stay as they are.
  const ours = new Set(conditions.map((c) => c.type));
  for (const c of prev ?? []) if (!ours.has(c.type)) conditions.push(c);
  const status: PodStatus = {
    ...previous,
    phase,
    conditions,
    hostIP: o.hostIP,
    hostIPs: [{ ip: o.hostIP }],
    startTime: previous.startTime ?? o.startTime,
    containerStatuses: o.app,
  };
  if (o.podIP) {
    status.podIP = o.podIP;
    status.podIPs = [{ ip: o.podIP }];
  }
  if (o.init.length) status.initContainerStatuses = o.init.map(({ sidecar: _, ...c }) => c);
  return status;
}
