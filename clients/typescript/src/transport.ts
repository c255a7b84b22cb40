/** JSON over HTTP with the platform's `fetch`, and the retry policy: connection errors, 408,
 * 429 and 5xx are retried with exponential backoff (full jitter), 429's Retry-After honoured;
 * a wait longer than `maxRetryWait` is not waited. No body over `limits.maxBodyBytes` is sent. */

import { ApiError, ConnectionFailed, HindsightError, RequestTooLarge, apiError } from "./errors.js";
import { byteLength, type Limits } from "./limits.js";

export const USER_AGENT = "hindsight-client-ts/0.1";

export interface RetryPolicy {
  /** Tries after the first. */
  retries: number;
  /** Backoff: attempt n waits up to min(cap, base * 2^n) seconds. */
  base: number;
  cap: number;
  /** Seconds; a longer wait (e.g. a long Retry-After) throws instead. */
  maxRetryWait: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 2, base: 0.2, cap: 2, maxRetryWait: 5 };

export class Transport {
  readonly baseUrl: string;

  constructor(
    baseUrl: string,
    readonly apiKey: string,
    readonly limits: Limits,
    readonly timeoutMs = 10_000,
  ) {
    let url = baseUrl.replace(/\/+$/, "");
    if (!url.endsWith("/api/v1")) url += "/api/v1";
    if (!/^https?:\/\/[^/]+/.test(url)) throw new TypeError(`baseUrl must be an http(s) URL; got ${baseUrl}`);
    this.baseUrl = url;
  }

  /** The decoded JSON of a 2xx answer; ApiError for any other status; ConnectionFailed when
   * the server cannot be reached or the answer was cut. */
  async request(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<any> {
    return this.requestEncoded(method, path, body === undefined ? undefined : JSON.stringify(body), timeoutMs);
  }

  /** As `request`, with a body already encoded as JSON. */
  async requestEncoded(method: string, path: string, data?: string, timeoutMs?: number): Promise<any> {
    if (data !== undefined) {
      const size = byteLength(data);
      if (size > this.limits.maxBodyBytes) {
        throw new RequestTooLarge(
          413,
          `request body is ${size} bytes; the limit is ${this.limits.maxBodyBytes} bytes (not sent: over the client's limits.maxBodyBytes)`,
          null,
          true,
        );
      }
    }
    const url = `${this.baseUrl}/${path.replace(/^\/+/, "")}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        body: data,
        headers: {
          Authorization: `Bearer ${this.apiKey}`,
          "Content-Type": "application/json",
          Accept: "application/json",
          "User-Agent": USER_AGENT,
        },
        signal: AbortSignal.timeout(timeoutMs ?? this.timeoutMs),
      });
    } catch (error) {
      throw new ConnectionFailed(`${method} ${url}: ${(error as Error).message}`, { cause: error });
    }
    let raw: string;
    try {
      raw = await response.text();
    } catch (error) {
      throw new ConnectionFailed(`${method} ${url}: the answer was cut`, { cause: error });
    }
    if (!response.ok) {
      throw apiError(response.status, detailOf(raw), retryAfter(response.headers.get("Retry-After")));
    }
    return raw ? JSON.parse(raw) : null;
  }
}

function detailOf(raw: string): unknown {
  try {
    const payload = JSON.parse(raw);
    return payload && typeof payload === "object" && "detail" in payload ? payload.detail : payload;
  } catch {
    return raw.slice(0, 500);
  }
}

function retryAfter(value: string | null): number | null {
  if (!value) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? seconds : null;
}

export function isRetryable(error: unknown): boolean {
  if (error instanceof ConnectionFailed) return true;
  return error instanceof ApiError && !error.clientSide && error.isTransient;
}

/** Seconds to wait before try `attempt` (0-based) after `error`. */
export function backoffDelay(policy: RetryPolicy, attempt: number, error: unknown): number {
  if (error instanceof ApiError && error.retryAfter !== null) return Math.max(0, error.retryAfter);
  const ceiling = Math.min(policy.cap, policy.base * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export async function withRetries<T>(policy: RetryPolicy, call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof HindsightError) || !isRetryable(error) || attempt >= policy.retries) throw error;
      const delay = backoffDelay(policy, attempt, error);
      if (delay > policy.maxRetryWait) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay * 1000));
    }
  }
}
