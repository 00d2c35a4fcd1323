/**
 * The simulator's only source of randomness: sfc32 seeded through splitmix32, one stream per part
 * of a simulation (arrivals, pull requests, CI) derived from the seed and the stream's name, so
 * that changing how much one part draws leaves the others' draws as they were. Same seed and name,
 * same numbers, on every platform.
 */

/** FNV-1a of a string: a stream's name as a 32-bit number. */
function hashName(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** splitmix32: spreads a 32-bit seed over the generator's state words. */
function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /**
   * `seed`: any whole number (the low and high 32 bits both count, up to 2^53); `stream`: the
   * name of an independent sequence for the same seed.
   */
  constructor(seed: number, stream = "") {
    if (!Number.isSafeInteger(seed) || seed < 0) {
      throw new RangeError(`A seed is a whole number from 0 to 2^53-1 (got ${seed}).`);
    }
    const low = seed >>> 0;
    const high = Math.floor(seed / 0x100000000) >>> 0;
    const mix = splitmix32(low ^ Math.imul(high, 0x9e3779b1) ^ hashName(stream));
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix() | 1;
    for (let i = 0; i < 12; i++) this.nextUint32(); // leave the seeding's neighbourhood
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform on [0, 1), 53 random bits. */
  next(): number {
    const high = this.nextUint32() >>> 5; // 27 bits
    const low = this.nextUint32() >>> 6; // 26 bits
    return (high * 67108864 + low) / 9007199254740992;
  }

  /** Uniform on [min, max). */
  uniform(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A whole number from 0 to `n - 1`. */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Exponentially distributed with the given mean (the gaps of a Poisson process). */
  exponential(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  /** A value of a weighted table (weights sum to 1; the last entry absorbs rounding). */
  weighted<T>(table: readonly { weight: number; value: T }[]): T {
    if (table.length === 0) throw new RangeError("weighted: empty table");
    let u = this.next();
    for (const row of table) {
      if (u < row.weight) return row.value;
      u -= row.weight;
    }
    const last = table[table.length - 1];
    if (last === undefined) throw new RangeError("weighted: empty table");
    return last.value;
  }

  /** `k` distinct items of `items`, in their original order (a partial Fisher-Yates shuffle). */
  sample<T>(items: readonly T[], k: number): T[] {
    const indexes = items.map((_, i) => i);
    const count = Math.min(k, items.length);
    for (let i = 0; i < count; i++) {
      const j = i + this.int(indexes.length - i);
      const swap = indexes[i] ?? 0;
      indexes[i] = indexes[j] ?? 0;
      indexes[j] = swap;
    }
    return indexes
      .slice(0, count)
      .sort((x, y) => x - y)
      .map((i) => items[i] as T);
  }
}
