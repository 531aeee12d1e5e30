// The lines of a watch stream (one JSON event per line). Bytes arrive in chunks that may end inside a
// multi-byte UTF-8 character (a ’ in a condition message is three bytes); the decoder carries the
// unfinished character over to the next chunk instead of replacing it.
export class WatchLines {
  private readonly decoder = new TextDecoder('utf-8');
  private buffered = '';

  /** The complete, non-empty lines this chunk finishes. */
  push(chunk: Uint8Array): string[] {
    this.buffered += this.decoder.decode(chunk, { stream: true });
    const lines = this.buffered.split('\n');
    this.buffered = lines.pop()!;
    return lines.map((l) => l.trim()).filter((l) => l.length > 0);
  }
}
