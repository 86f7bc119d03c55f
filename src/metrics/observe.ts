// The one place requests are measured: the assembly (src/app/app.ts) wraps every declared route's
// handler, dispatcher and other-methods answer with `observed`, so each request is counted
// (./counters.ts) and logged (./access-log.ts) once, under its route family. Time comes from
// performance.now(); nothing is allocated for the counters on the request path.
import type { TrustProxy } from "../config";
import { clientAddress, hashedAddress, type PeerSource } from "../http/client";
import { errorResponse } from "../http/respond";
import type { AccessLog } from "./access-log";
import { countRequest, familyIndex, FAMILIES, type Family } from "./counters";

export type Handler<P> = (request: Request, server: PeerSource | null, params?: P) => Response | Promise<Response>;

export class RequestObserver {
  constructor(
    private readonly accessLog: AccessLog | null,
    private readonly trust: TrustProxy,
    private readonly salt: string,
  ) {}

  /** Records one answered request of family index `f` that started at `t0` (performance.now()). */
  record(f: number, request: Request, server: PeerSource | null, t0: number, status: number): void {
    const end = performance.now();
    const ms = end - t0;
    countRequest(f, request.method, status, ms);
    if (this.accessLog) {
      // The address the limits count by (TRUST_PROXY applies), hashed with the installation's salt.
      const client = hashedAddress(this.salt, clientAddress(request, server, this.trust)).hash;
      this.accessLog.line(FAMILIES[f]!, request.method, status, ms, client, end);
    }
  }

  /**
   * `handler`, measured. A handler that throws is answered here by the error renderer, as the
   * app's onError would have answered it, so that its status is known and counted.
   */
  observed<P>(family: Family, handler: Handler<P>): Handler<P> {
    const f = familyIndex(family);
    return (request, server, params) => {
      const t0 = performance.now();
      let out: Response | Promise<Response>;
      try {
        out = handler(request, server, params);
      } catch (err) {
        out = errorResponse(err);
      }
      if (out instanceof Response) {
        this.record(f, request, server, t0, out.status);
        return out;
      }
      return out.then(
        (res) => (this.record(f, request, server, t0, res.status), res),
        (err) => {
          const res = errorResponse(err);
          this.record(f, request, server, t0, res.status);
          return res;
        },
      );
    };
  }
}
