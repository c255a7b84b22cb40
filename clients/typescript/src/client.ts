/** `HindsightClient`: recall, warnings before a tool call, trace upload, and recorders. */

import { RequestTooLarge } from "./errors.js";
import { byteLength, DEFAULT_LIMITS, type Limits } from "./limits.js";
import { type Recall, recallFromJson, type ToolWarning, warningFromJson } from "./models.js";
import { type RecorderOptions, TrajectoryRecorder, withoutUndefined } from "./recorder.js";
import { DEFAULT_RETRY, type RetryPolicy, Transport, withRetries } from "./transport.js";

export interface ClientOptions {
  /** Milliseconds per request. */
  timeoutMs?: number;
  /** The server's size limits (its defaults unless it runs with other HINDSIGHT_MAX_*). */
  limits?: Partial<Limits>;
  /** Retries of calls (connection errors, 408, 429, 5xx) and their backoff. */
  retry?: Partial<RetryPolicy>;
}

export interface RecallOptions {
  taskType?: string;
  intent?: string;
  environment?: string[];
  tools?: string[];
  agent?: string;
  user?: string;
  k?: number;
  /** Also experience nobody approved yet. */
  includeCandidates?: boolean;
  includeWarnings?: boolean;
}

export interface WarningOptions {
  task?: string;
  environment?: string[];
  agent?: string;
  /** Milliseconds; keep it short, it is asked before every tool call. */
  timeoutMs?: number;
}

export class HindsightClient {
  readonly transport: Transport;
  readonly limits: Limits;
  readonly retry: RetryPolicy;

  constructor(baseUrl: string, apiKey: string, options: ClientOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
    this.retry = { ...DEFAULT_RETRY, ...(options.retry ?? {}) };
    this.transport = new Transport(baseUrl, apiKey, this.limits, options.timeoutMs);
  }

  /** Experience relevant to `task`, ranked and explained, with a ready-to-inject
   * `promptBlock`. */
  async recall(task: string, options: RecallOptions = {}): Promise<Recall> {
    const body = withoutUndefined({
      task,
      task_type: options.taskType,
      intent: options.intent,
      environment: options.environment,
      tools: options.tools,
      agent: options.agent,
      user: options.user,
      k: options.k,
      include_candidates: options.includeCandidates,
      include_warnings: options.includeWarnings,
    });
    return recallFromJson(await this.call("POST", "recall", body));
  }

  async recallFeedback(recallId: number, feedback: { helpful?: number[]; unhelpful?: number[] }): Promise<unknown> {
    return this.call("POST", `recall/${recallId}/feedback`, {
      helpful: feedback.helpful ?? [],
      unhelpful: feedback.unhelpful ?? [],
    });
  }

  /** Frequent failure patterns matching a planned call (empty when nothing matches). */
  async checkToolCall(tool: string, args: unknown, options: WarningOptions = {}): Promise<ToolWarning[]> {
    const body = withoutUndefined({ tool, arguments: args, task: options.task, environment: options.environment, agent: options.agent });
    const answer = await withRetries(this.retry, () => this.transport.request("POST", "warnings", body, options.timeoutMs));
    return (answer?.warnings ?? []).map(warningFromJson);
  }

  /** Store one complete trajectory (idempotent on `external_id`). */
  async sendTrace(trace: Record<string, unknown>): Promise<Record<string, any>> {
    return this.call("POST", "traces", trace);
  }

  /** Store many, in as many `traces/batch` requests as the limits need; one result per trace,
   * in order. A trace too large for a request on its own throws before anything is sent. */
  async sendTraces(traces: Record<string, unknown>[]): Promise<Record<string, any>[]> {
    const room = this.limits.maxBodyBytes - 16;
    const encoded = traces.map((trace) => JSON.stringify(trace));
    encoded.forEach((item, position) => {
      const size = byteLength(item);
      if (size > room) {
        throw new RequestTooLarge(413, `trace ${position} is ${size} bytes; one request holds at most ${this.limits.maxBodyBytes} bytes (nothing was sent)`, null, true);
      }
    });
    const results: Record<string, any>[] = [];
    let chunk: string[] = [];
    let used = 0;
    const flush = async () => {
      const data = `{"traces":[${chunk.join(",")}]}`;
      const answer = await withRetries(this.retry, () => this.transport.requestEncoded("POST", "traces/batch", data));
      results.push(...answer.results);
      chunk = [];
      used = 0;
    };
    for (const item of encoded) {
      const size = byteLength(item) + 1;
      if (chunk.length && (chunk.length >= this.limits.maxBatch || used + size > room)) await flush();
      chunk.push(item);
      used += size;
    }
    if (chunk.length) await flush();
    return results;
  }

  async getTrace(traceId: number): Promise<Record<string, any>> {
    return this.call("GET", `traces/${traceId}`);
  }

  /** A recorder of one trajectory, sent when it finishes. */
  recorder(options: RecorderOptions): TrajectoryRecorder {
    return new TrajectoryRecorder(this.transport, this.limits, { ...this.retry, retries: Math.max(this.retry.retries, 5) }, options);
  }

  private call(method: string, path: string, body?: unknown): Promise<any> {
    return withRetries(this.retry, () => this.transport.request(method, path, body));
  }
}
