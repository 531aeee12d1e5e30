// What the kubelet reports when a container cannot start or has exited: pure functions of the facts.
import { constants } from 'node:os';
import { apiTime } from '../../kube/time.ts';
import { ContainerConfigError, CreateContainerError, ImageMissingError, MountError } from './errors.ts';
import type { ContainerStateTerminated, ContainerStateWaiting } from './pod-types.ts';

export interface PrepareFailure {
  waiting: ContainerStateWaiting;
  /** The Warning event's message. */
  event: string;
  /** How long until the start is tried again. */
  retryMs: number;
}

/** A start whose image, configuration or mounts could not be prepared. */
export function prepareFailure(err: unknown, image: string | undefined): PrepareFailure {
  const message = (err as Error).message;
  if (err instanceof ImageMissingError) {
    return {
      waiting: { reason: 'ErrImagePull', message },
      event: `Failed to pull image "${image}": ${message}`,
      retryMs: 5000,
    };
  }
  const reason =
    err instanceof ContainerConfigError
      ? 'CreateContainerConfigError'
      : err instanceof MountError || err instanceof CreateContainerError
        ? 'CreateContainerError'
        : 'RunContainerError';
  return { waiting: { reason, message }, event: `Error: ${message}`, retryMs: 2000 };
}

export interface ExitFacts {
  code: number | null;
  signal: NodeJS.Signals | null | undefined;
  /** Whether the command itself ran; a launch that failed before it is a StartError. */
  launched: boolean;
  message: string | undefined;
  startedAt: number | undefined;
  finishedAt: number;
  containerID: string | undefined;
}

function signalNumber(signal: NodeJS.Signals | null | undefined): number | undefined {
  return signal ? constants.signals[signal] : undefined;
}

/** The exit code as a shell reports it: 128 + the signal's number for a killed process. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null | undefined): number {
  const number = signalNumber(signal);
  return code ?? (number !== undefined ? 128 + number : 255);
}

export function terminatedState(facts: ExitFacts): ContainerStateTerminated {
  const signal = signalNumber(facts.signal);
  const exitCode = exitCodeOf(facts.code, facts.signal);
  return {
    exitCode: facts.launched ? exitCode : 128,
    ...(signal !== undefined && facts.launched ? { signal } : {}),
    reason: !facts.launched ? 'StartError' : exitCode === 0 ? 'Completed' : 'Error',
    ...(facts.message ? { message: facts.message } : {}),
    startedAt: apiTime(facts.startedAt),
    finishedAt: apiTime(facts.finishedAt),
    containerID: facts.containerID,
  };
}

/** The CrashLoopBackOff delays: doubling from the first up to the cap, reset after a long run. */
export function nextBackoff(
  previousMs: number | undefined,
  ranMs: number,
  limits: { initialMs: number; maxMs: number; resetAfterMs: number },
): { appliedMs: number; nextMs: number } {
  const current = ranMs >= limits.resetAfterMs ? undefined : previousMs;
  return {
    appliedMs: current ?? 0,
    nextMs: current === undefined ? limits.initialMs : Math.min(current * 2, limits.maxMs),
  };
}

/** The waiting state of an exited container while its restart is held back. */
export function crashLoopBackOff(appliedMs: number, container: string, pod: string): ContainerStateWaiting {
  const seconds = Math.round(appliedMs / 1000);
  return {
    reason: 'CrashLoopBackOff',
    message: `back-off ${seconds}s restarting failed container=${container} pod=${pod}`,
  };
}
