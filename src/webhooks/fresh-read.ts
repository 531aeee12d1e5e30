// A read from the apiserver that started after the caller asked, shared by every caller that asked
// while it was waiting to start. Admission judges some requests on a live list (a Binding created a
// moment ago may not be in the cache yet); fifty creates at once need not make fifty lists: callers
// that arrive while a list is in flight wait for the next one, which all of them then share.

export class FreshRead<T> {
  private readonly load: () => Promise<T>;
  private running: Promise<T> | undefined;
  private next: Promise<T> | undefined;

  constructor(load: () => Promise<T>) {
    this.load = load;
  }

  /** A result read entirely after this call: it sees everything written before the call. */
  get(): Promise<T> {
    if (!this.running) {
      const run = this.load().finally(() => {
        if (this.running === run) this.running = undefined;
      });
      this.running = run;
      return run;
    }
    // The read in flight may have started before this call: wait for it to end, then share one read.
    this.next ??= this.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.next = undefined;
        return this.get();
      });
    return this.next;
  }
}
