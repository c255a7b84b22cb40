/** What the client throws: `ApiError` for an answer other than 2xx (with the server's
 * `detail`), `ConnectionFailed` when the server cannot be reached. */

export class HindsightError extends Error {}

export class ConnectionFailed extends HindsightError {
  override name = "ConnectionFailed";
}

export class ApiError extends HindsightError {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly retryAfter: number | null = null,
    /** True when the client refused to send the request (over its `Limits`). */
    readonly clientSide = false,
  ) {
    super(`hindsight answered ${status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  }

  /** Worth retrying: 408, 429 and 5xx. */
  get isTransient(): boolean {
    return this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/** 413: the body is over the server's (or the client's) size limit. */
export class RequestTooLarge extends ApiError {
  override name = "RequestTooLarge";
}

/** 422 or 400: the server names the fields at fault in `detail`. */
export class InvalidRequest extends ApiError {
  override name = "InvalidRequest";
}

export function apiError(status: number, detail: unknown, retryAfter: number | null): ApiError {
  if (status === 413) return new RequestTooLarge(status, detail, retryAfter);
  if (status === 422 || status === 400) return new InvalidRequest(status, detail, retryAfter);
  return new ApiError(status, detail, retryAfter);
}
