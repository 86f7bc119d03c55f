// A bounded map that forgets what goes unused, for the per-request lookups of the hottest path
// (client addresses and their counts): two generations of Maps, the recent one filled until it
// holds `half` entries, then made the older one, and the older dropped. A key read from the older
// generation moves to the recent one. What falls out is what went unused while `half` others came
// in: least recently used, near enough, for the price of a Map lookup (an LRU's bookkeeping showed
// in the profile of a DNI request).
export class Generations<K, V> {
  private recent = new Map<K, V>();
  private older = new Map<K, V>();

  /**
   * `onDrop` sees each entry of a dropped generation that did not move on (`shadowed`: the key
   * has a newer value) and answers true to keep it in the recent generation instead.
   */
  constructor(
    private readonly half: number,
    private readonly onDrop?: (key: K, value: V, shadowed: boolean) => boolean,
  ) {}

  get(key: K): V | undefined {
    const v = this.recent.get(key);
    if (v !== undefined) return v;
    const old = this.older.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: K, value: V): void {
    if (this.recent.size >= this.half) {
      const dropped = this.older;
      this.older = this.recent;
      this.recent = new Map();
      if (this.onDrop) {
        for (const [k, v] of dropped) {
          const now = this.older.get(k);
          if (now !== v && this.onDrop(k, v, now !== undefined)) this.recent.set(k, v);
        }
      }
    }
    this.recent.set(key, value);
  }

  clear(): void {
    this.recent = new Map();
    this.older = new Map();
  }
}
