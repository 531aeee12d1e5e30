// A running container's probes, in the kubelet's order: the startup probe alone until it succeeds,
// then liveness and readiness together.
import type { Container, Probe } from './pod-types.ts';
import { type ProbeKind, type ProbeTarget, ProbeWorker } from './probes.ts';

export interface ProbeEvents {
  /** A probe's verdict changed. */
  onChange(kind: ProbeKind, ok: boolean): void;
  /** One probe attempt failed, with the reason. */
  onFailure(kind: ProbeKind, message: string): void;
}

export class ContainerProbes {
  private readonly container: Container;
  private readonly target: () => ProbeTarget;
  private readonly events: ProbeEvents;
  private workers: ProbeWorker[] = [];

  constructor(container: Container, target: () => ProbeTarget, events: ProbeEvents) {
    this.container = container;
    this.target = target;
    this.events = events;
  }

  /** The container has just started: the startup probe if it has one, else liveness and readiness. */
  start(): void {
    this.stop();
    const { startupProbe } = this.container;
    if (startupProbe) this.run([['Startup', startupProbe]]);
    else this.startSteadyState();
  }

  /** The startup probe succeeded: liveness and readiness take over. */
  startSteadyState(): void {
    this.stop();
    const { livenessProbe, readinessProbe } = this.container;
    const probes: [ProbeKind, Probe | undefined][] = [
      ['Liveness', livenessProbe],
      ['Readiness', readinessProbe],
    ];
    this.run(probes.filter((p): p is [ProbeKind, Probe] => p[1] !== undefined));
  }

  stop(): void {
    for (const worker of this.workers) worker.stop();
    this.workers = [];
  }

  private run(probes: [ProbeKind, Probe][]): void {
    this.workers = probes.map(
      ([kind, probe]) =>
        new ProbeWorker(kind, probe, this.target(), {
          onChange: (ok) => this.events.onChange(kind, ok),
          onFailure: (message) => this.events.onFailure(kind, message),
        }),
    );
    for (const worker of this.workers) worker.start();
  }
}
