// The API's two timestamp formats.

/** metav1.Time: RFC 3339 in whole seconds (conditions, events, container states). */
export function apiTime(at: Date | number = Date.now()): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits (a Lease's acquire and renew times). */
export function microTime(at: Date | number = Date.now()): string {
  return new Date(at).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
