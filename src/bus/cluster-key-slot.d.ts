// `cluster-key-slot` (a dependency of ioredis, which routes with it) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (0..16383) of a key, honouring its `{hash tag}`. */
  function calculateSlot(key: string | Uint8Array): number;
  export default calculateSlot;
}
