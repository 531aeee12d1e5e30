// One AbortController per leadership term. Every write the operator makes takes the current term's
// signal (the API client's and the store client's), so when the term ends a write in flight is
// cancelled and none starts; reads never take it. See docs/decisions/0005-single-writer-status.md.
import { type Clock, realClock } from './clock.ts';

/** A write refused or cancelled because this replica no longer leads (or has not yet). */
export class NotLeading extends Error {
  constructor(why: string) {
    super(`not leading: ${why}`);
    this.name = 'NotLeading';
  }
}

export class LeadershipTerm {
  private controller = ended('no term has begun');
  private deadline: () => number = () => Number.POSITIVE_INFINITY;
  /** The clock the deadline is read on: the election's. */
  private readonly clock: Pick<Clock, 'now'>;

  constructor(clock: Pick<Clock, 'now'> = realClock) {
    this.clock = clock;
  }

  /**
   * The signal a write takes when it starts: the term's, aborted when the term ends. Past the term's
   * deadline (on the term's clock) it is an aborted one, so no write starts on a late timer.
   */
  get signal(): AbortSignal {
    const { signal } = this.controller;
    if (signal.aborted || this.clock.now() < this.deadline()) return signal;
    return AbortSignal.abort(new NotLeading('the renew deadline passed'));
  }

  /** A new term, ending by end() or, for a new write, at `deadline()` (none without an election). */
  begin(deadline: () => number = () => Number.POSITIVE_INFINITY): void {
    this.controller.abort(new NotLeading('a new term began'));
    this.controller = new AbortController();
    this.deadline = deadline;
  }

  /** Ends the term: every write in flight is cancelled, and every later one refused until the next. */
  end(why: string): void {
    this.controller.abort(new NotLeading(why));
  }
}

function ended(why: string): AbortController {
  const controller = new AbortController();
  controller.abort(new NotLeading(why));
  return controller;
}
