// A terminated container's message, as the kubelet reads it: the termination-message file (at most
// 4 KiB), or with `terminationMessagePolicy: FallbackToLogsOnError` and a failure, the last 80 lines
// (at most 2 KiB) of what this run logged.
import { closeSync, openSync, readSync, statSync } from 'node:fs';

const fileLimit = 4096;
const fallbackLines = 80;
const fallbackBytes = 2048;

function readHead(path: string, maxBytes: number): string {
  try {
    const fd = openSync(path, 'r');
    const buf = Buffer.alloc(maxBytes);
    const n = readSync(fd, buf, 0, maxBytes, 0);
    closeSync(fd);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return '';
  }
}

/** The last lines written to `path` after byte `from`. */
export function logTail(path: string, from: number): string {
  try {
    const size = statSync(path).size;
    const start = Math.max(from, size - 64 * 1024);
    const fd = openSync(path, 'r');
    const buf = Buffer.alloc(size - start);
    readSync(fd, buf, 0, buf.length, start);
    closeSync(fd);
    const lines = buf.toString('utf8').replace(/\n$/, '').split('\n').slice(-fallbackLines).join('\n');
    return lines.length > fallbackBytes ? lines.slice(-fallbackBytes) : lines;
  } catch {
    return '';
  }
}

export function terminationMessage(options: {
  file: string;
  log: string;
  logOffset: number;
  exitCode: number;
  fallbackToLogs: boolean;
}): string {
  const message = readHead(options.file, fileLimit);
  if (message || options.exitCode === 0 || !options.fallbackToLogs) return message;
  return logTail(options.log, options.logOffset);
}
