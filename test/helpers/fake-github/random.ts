/**
 * The fake's only source of chance (flaky checks, webhook chaos, token text, delivery GUIDs), so
 * that a run is repeatable under one seed. mulberry32: small, fast, good enough for tests.
 */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return probability > 0 && this.next() < probability;
  }

  hex(length: number): string {
    let out = "";
    while (out.length < length) out += Math.floor(this.next() * 16).toString(16);
    return out;
  }

  alphanumeric(length: number): string {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let out = "";
    for (let i = 0; i < length; i++)
      out += alphabet.charAt(Math.floor(this.next() * alphabet.length));
    return out;
  }

  /** A version-4-shaped GUID, as GitHub sends in `X-GitHub-Delivery`. */
  guid(): string {
    const h = this.hex(32);
    const variant = "89ab"[Math.floor(this.next() * 4)] ?? "8";
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
}
