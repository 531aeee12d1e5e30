// An address as URLs and dialers take it: an IPv6 host in brackets.

/** `host:port`, with an IPv6 host bracketed. */
export function hostPort(host: string, port: number | string): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
