/** Caps that keep a hostile or broken bundle from exhausting memory or disk (zip bombs). */
export interface BundleLimits {
  /** Total bytes of the tar stream after decompression (default 2 GiB). */
  maxDecompressedBytes: number;
  /** Tar entries, directories and skipped files included (default 10,000). */
  maxEntries: number;
  /** `meta.json` is buffered, so it gets its own small cap (default 10 MiB). */
  maxMetaBytes: number;
  /** `CODEOWNERS` is buffered too (default 5 MiB; GitHub itself stops reading at 3 MB). */
  maxCodeownersBytes: number;
  /** A binary test report (`internal.bin`) is decoded whole, so it is buffered (default 256 MiB). */
  maxReportBytes: number;
}

export const DEFAULT_BUNDLE_LIMITS: Readonly<BundleLimits> = {
  maxDecompressedBytes: 2 * 1024 ** 3,
  maxEntries: 10_000,
  maxMetaBytes: 10 * 1024 ** 2,
  maxCodeownersBytes: 5 * 1024 ** 2,
  maxReportBytes: 256 * 1024 ** 2,
};

export function resolveLimits(overrides: Partial<BundleLimits> = {}): BundleLimits {
  return { ...DEFAULT_BUNDLE_LIMITS, ...overrides };
}
