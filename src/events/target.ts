// Where one attempt connects: the endpoint's name resolved now (not at provisioning), every
// address checked, and the connection made to the checked address itself, so that a name that
// resolves differently a moment later (DNS rebinding) cannot send the request elsewhere.
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { forbiddenAddress } from "./address";

export type Lookup = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemLookup: Lookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** A request to send: the URL to fetch (its host is the checked address) and the headers naming the endpoint. */
export interface Target {
  /** The endpoint's URL with its host replaced by the address connected to. */
  fetchUrl: string;
  /** The address connected to. */
  address: string;
  /** Host header: the endpoint's own host[:port]. */
  host: string;
  /** TLS server name (SNI and certificate check): the endpoint's host name; null for an address literal or http. */
  serverName: string | null;
  /** Basic credentials from the URL's user info, if any: the rewritten URL no longer carries them. */
  authorization: string | null;
}

export class Refused extends Error {}

/**
 * Resolves `raw` for an attempt. Throws Refused (a clear, operator-facing reason) when the URL is
 * not https (unless private targets are allowed), does not resolve, or resolves to any address
 * that is not public. Every resolved address is checked, not only the one used: a name that
 * mixes public and private answers is refused rather than trusted.
 */
export async function resolveTarget(raw: string, allowPrivate: boolean, lookup: Lookup): Promise<Target> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Refused(`refused: ${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    throw new Refused(
      `refused: ${url.protocol.slice(0, -1)} URL; endpoints must be https` +
        (url.protocol === "http:" ? " (WEBHOOK_ALLOW_PRIVATE=true allows http)" : ""),
    );
  }
  const name = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: string[];
  if (isIP(name) !== 0) {
    addresses = [name];
  } else {
    try {
      addresses = (await lookup(name)).map((a) => a.address);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new Refused(`DNS: ${name} did not resolve${typeof code === "string" ? ` (${code})` : ""}`);
    }
    if (addresses.length === 0) throw new Refused(`DNS: ${name} did not resolve`);
  }
  if (!allowPrivate) {
    for (const address of addresses) {
      const what = forbiddenAddress(address);
      if (what !== null) {
        const via = address === name ? " is" : ` resolves to ${address},`;
        throw new Refused(
          `refused: ${name}${via} a ${what} address; webhooks go to public addresses only (WEBHOOK_ALLOW_PRIVATE=true allows it)`,
        );
      }
    }
  }
  const address = addresses[0];
  const fetchUrl = new URL(url);
  fetchUrl.username = "";
  fetchUrl.password = "";
  fetchUrl.hostname = isIP(address) === 6 ? `[${address}]` : address;
  const authorization =
    url.username || url.password
      ? "Basic " +
        Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")
      : null;
  return {
    fetchUrl: fetchUrl.toString(),
    address,
    host: url.host,
    serverName: url.protocol === "https:" && isIP(name) === 0 ? name : null,
    authorization,
  };
}
