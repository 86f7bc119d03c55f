// IP addresses as text, parsed by hand: one pass over at most a few dozen characters, no regular
// expression and no dependency. An address has one canonical text (so that one client always has
// one hash) and one bucket: what the address limits and the DNI holds cap count by.

/** A parsed address: IPv4 as its dotted text, IPv6 as eight 16-bit groups. */
export type Ip = { v: 4; text: string } | { v: 6; groups: number[] };

const MAX_TEXT = 64;

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Dotted-quad IPv4 (decimal, 1-3 digits a part, each at most 255) as a 32-bit number, with
 * `canonical` false when a part has a leading zero; null if not one. (No array: this runs for
 * every DNI request.)
 */
function parseV4(s: string, from: number, to: number): { value: number; canonical: boolean } | null {
  let value = 0;
  let parts = 0;
  let n = 0;
  let digits = 0;
  let canonical = true;
  for (let i = from; i <= to; i++) {
    const c = i === to ? 46 : s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || n > 255 || parts === 4) return null;
      value = value * 256 + n;
      parts++;
      n = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57 && digits < 3) {
      if (digits === 1 && n === 0) canonical = false;
      n = n * 10 + (c - 48);
      digits++;
    } else return null;
  }
  return parts === 4 ? { value, canonical } : null;
}

const v4Text = (v: number) => `${Math.floor(v / 16777216)}.${Math.floor(v / 65536) % 256}.${Math.floor(v / 256) % 256}.${v % 256}`;

/** IPv6 with `::` compression and an optional dotted IPv4 tail, as eight groups; null if not one. */
function parseV6(s: string, from: number, to: number): number[] | null {
  const head: number[] = [];
  const tail: number[] = [];
  let groups = head;
  let gap = false;
  let i = from;
  if (s.startsWith("::", i)) {
    gap = true;
    groups = tail;
    i += 2;
    if (i === to) return new Array(8).fill(0);
  }
  while (i < to) {
    let n = 0;
    let j = i;
    while (j < to && j - i < 5) {
      const d = hexDigit(s.charCodeAt(j));
      if (d < 0) break;
      n = n * 16 + d;
      j++;
    }
    if (j < to && s.charCodeAt(j) === 46) {
      // The dotted IPv4 tail: the last 32 bits.
      const v4 = parseV4(s, i, to);
      if (!v4) return null;
      groups.push(Math.floor(v4.value / 65536), v4.value % 65536);
      i = to;
      break;
    }
    if (j === i || j - i > 4) return null;
    groups.push(n);
    if (j === to) {
      i = to;
      break;
    }
    if (s.charCodeAt(j) !== 58) return null;
    if (j + 1 < to && s.charCodeAt(j + 1) === 58) {
      if (gap) return null;
      gap = true;
      groups = tail;
      i = j + 2;
      if (i === to) break;
    } else {
      i = j + 1;
      if (i === to) return null; // a trailing single colon
    }
  }
  const filled = head.length + tail.length;
  if (gap ? filled > 7 : filled !== 8) return null;
  return [...head, ...new Array(8 - filled).fill(0), ...tail];
}

/**
 * The address in `raw`: IPv4, or IPv6 with or without brackets, a zone id (`%eth0`, dropped) or a
 * port (`1.2.3.4:80`, `[::1]:80`, dropped). An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is the
 * IPv4 address. Null when `raw` is not an address.
 */
export function parseIp(raw: string): Ip | null {
  let s = raw.trim();
  if (s.length === 0 || s.length > MAX_TEXT) return null;
  if (s.charCodeAt(0) === 91) {
    // [v6] or [v6]:port
    const close = s.indexOf("]");
    if (close < 0) return null;
    const rest = s.slice(close + 1);
    if (rest !== "" && !isPort(rest)) return null;
    s = s.slice(1, close);
  } else if (s.indexOf(":") === s.lastIndexOf(":") && s.indexOf(":") > 0) {
    // One colon: IPv4 with a port (an IPv6 address has at least two).
    const colon = s.indexOf(":");
    if (!isPort(s.slice(colon))) return null;
    s = s.slice(0, colon);
  }
  const zone = s.indexOf("%");
  const end = zone < 0 ? s.length : zone;
  if (s.indexOf(":") < 0) {
    const v4 = parseV4(s, 0, end);
    if (!v4) return null;
    return { v: 4, text: v4.canonical && end === s.length ? s : v4Text(v4.value) };
  }
  const g = parseV6(s, 0, end);
  if (!g) return null;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return { v: 4, text: v4Text(g[6] * 65536 + g[7]) };
  }
  return { v: 6, groups: g };
}

function isPort(s: string): boolean {
  if (s.length < 2 || s.length > 6 || s.charCodeAt(0) !== 58) return false;
  for (let i = 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** RFC 5952 text: lower case, no leading zeros, the longest run (of two or more) of zero groups as `::`. */
function v6Text(g: number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (a: number, b: number) => g.slice(a, b).map((n) => n.toString(16)).join(":");
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLen, 8)}`;
}

/** The canonical text of an address (`2001:DB8:0::1` and `2001:db8::1` are one client). */
export function ipText(ip: Ip): string {
  return ip.v === 4 ? ip.text : v6Text(ip.groups);
}

/**
 * What the address limits count by: an IPv4 address itself; an IPv6 address's /64, since one host
 * is given a whole /64 and may use any address in it (written as the prefix, `2001:db8:1:2::/64`).
 */
export function ipBucket(ip: Ip): string {
  return ip.v === 4 ? ip.text : `${v6Text([...ip.groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

/** 127.0.0.0/8 and ::1 (an IPv4-mapped loopback address has already become 127.x). */
export function isLoopback(ip: Ip): boolean {
  if (ip.v === 4) return ip.text.startsWith("127.");
  const g = ip.groups;
  return g[7] === 1 && g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0 && g[6] === 0;
}
