/**
 * A bounded map for a value read on every event (the last time zone seen per user,
 * src/services/user-op.ts): two generations of plain Maps. New entries go to the young one; when it
 * is full it becomes the old one (the previous old one is dropped), and an entry read from the old
 * one moves up. An entry read or written within the last `perGeneration` writes is never dropped, so
 * it keeps about what an LRU of 2 × `perGeneration` keeps, at a Map's cost: lru-cache's get and set
 * were 2.5 % of the API process's CPU in the bench's profile (its recency list and per-call options
 * work for every read).
 */
export class TwoGenerationCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();

  constructor(private readonly perGeneration: number) {}

  get(key: string): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) this.set(key, o);
    return o;
  }

  set(key: string, value: V): void {
    if (this.young.size >= this.perGeneration && !this.young.has(key)) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  /** Entries held (both generations; a key moved up may be counted twice until the next turnover). */
  get size(): number {
    return this.young.size + this.old.size;
  }
}
