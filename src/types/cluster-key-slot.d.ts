/** cluster-key-slot (the Redis Cluster key slot of ioredis), which ships no types of its own. */
declare module 'cluster-key-slot' {
  /** The slot (0-16383) of a key: CRC16 of its hash tag, or of the whole key without one. */
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
