// CORS for the two public surfaces (DNI and booking): any origin, never credentials, so that any
// site may embed them and a browser can read every answer, errors and 429s included. Written here
// once; `@elysiajs/cors` is not used: its defaults reflect any origin with credentials allowed.

export interface Cors {
  /** On every answer of the surface, errors included. */
  headers: Readonly<Record<string, string>>;
  /** The 204 answer to a preflight. */
  preflight(): Response;
}

/**
 * `methods`: what a preflight allows (`Access-Control-Allow-Methods`); `extra`: headers every
 * answer (not the preflight) carries besides the origin, such as `cache-control`.
 */
export function publicCors(methods: string, extra: Record<string, string> = {}): Cors {
  const preflight = {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": methods,
    "access-control-allow-headers": "content-type",
    // A day (browsers cap it lower: Chromium at two hours); the answer never changes.
    "access-control-max-age": "86400",
  };
  return {
    headers: Object.freeze({ ...extra, "access-control-allow-origin": "*" }),
    preflight: () => new Response(null, { status: 204, headers: preflight }),
  };
}
