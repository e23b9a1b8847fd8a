// The two ways the API writes a time: `metav1.Time` (RFC 3339 to the second, as in conditions and status times) and
// `metav1.MicroTime` (to the microsecond: Events, Leases). Every surface formats through here.

/** RFC 3339 to the second (`2026-01-01T00:00:00Z`), as the API server writes `metav1.Time`. */
export function formatApiTime(at: number | Date): string {
  return (at instanceof Date ? at : new Date(at)).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** RFC 3339 with microseconds (`2026-01-01T00:00:00.123000Z`), as `metav1.MicroTime` is written. */
export function formatMicroTime(at: number | Date): string {
  return (at instanceof Date ? at : new Date(at)).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
