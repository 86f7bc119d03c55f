// The Host check of the console's state-changing routes and of /metrics (docs/security.md: DNS
// rebinding). A page on evil.example whose name an attacker re-points at 127.0.0.1 is, to the
// browser, same-origin with whatever listens there: it may post the sign-in form and read /metrics
// from a loopback install, and its Origin matches the Host it sends. What it cannot change is that
// Host: it names the attacker's domain. So these routes answer only a Host that is BASE_URL's host
// name, or a loopback address literal (no name, so nothing to re-point: how a loopback install and
// the tests are reached). The port is not compared: nginx passes `$host`, which has none, and
// rebinding changes the name, not the port.
import { isLoopback, parseIp } from "./address";

/** `name`, `name:port`, `[v6]` or `[v6]:port`; anything else (userinfo, a path, spaces) is no host. */
const HOST = /^(\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9][A-Za-z0-9.-]{0,252})(?::\d{1,5})?$/;

/** The host name of a Host header, lowercased without a final dot; null when it is not one. */
export function hostName(header: string): string | null {
  const m = HOST.exec(header);
  return m ? m[1]!.toLowerCase().replace(/\.$/, "") : null;
}

/** The check for one BASE_URL: true when the request's Host names this service (see the top of this file). */
export function ownHost(baseUrl: string): (request: Request) => boolean {
  const own = new URL(baseUrl).hostname.toLowerCase().replace(/\.$/, "");
  return (request) => {
    const header = request.headers.get("host");
    const name = header === null ? null : hostName(header);
    if (name === null) return false;
    if (name === own) return true;
    const ip = parseIp(name);
    return ip !== null && isLoopback(ip);
  };
}
