/**
 * Every way an uploaded bundle can be unusable ends in a `BundleError` whose `reason` is one
 * sentence meant for the uploader: a failed upload is recorded with that reason.
 */
export class BundleError extends Error {
  readonly reason: string;

  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = "BundleError";
    this.reason = reason;
  }
}

/** The message of anything thrown, for embedding in a reason. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
