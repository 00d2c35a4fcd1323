/** Reproducible pseudo-random numbers for generated workloads (benchmarks, tests, simulations). */

/** mulberry32: small, fast, good enough for test data, and the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `length` hexadecimal digits drawn from `next` (commit-like ids). */
export const randomHex = (next: () => number, length: number): string =>
  Array.from({ length }, () => Math.floor(next() * 16).toString(16)).join("");
