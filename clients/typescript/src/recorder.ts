/** `TrajectoryRecorder`: collects one run's steps and sends them when it finishes, as the
 * streaming calls (`traces/open`, `traces/{id}/steps` in batches within the limits,
 * `traces/{id}/complete`), each retried on connection errors, 408, 429 and 5xx. Recording
 * never throws over the server; `finish()` reports what happened. */

import { randomUUID } from "node:crypto";

import { HindsightError } from "./errors.js";
import { byteLength, fitStep, type Limits, type Step } from "./limits.js";
import { type RetryPolicy, type Transport, withRetries } from "./transport.js";

export const STEP_KINDS = ["user_input", "llm_reasoning", "tool_call", "system", "state_change"] as const;
export type StepKind = (typeof STEP_KINDS)[number];
export const OUTCOMES = ["success", "failure", "partial", "unknown"] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface RecorderOptions {
  agent: string;
  task: string;
  environment?: string[];
  externalId?: string;
  taskType?: string;
  intent?: string;
  sessionId?: string;
  user?: string;
  metadata?: Record<string, unknown>;
  /** Steps per `traces/{id}/steps` request. */
  batchSize?: number;
  /** Bytes per `traces/{id}/steps` request (and per step). */
  maxBatchBytes?: number;
}

export interface StepEvent {
  kind?: StepKind;
  tool?: string;
  arguments?: unknown;
  observation?: unknown;
  isError?: boolean;
  errorType?: string;
  content?: string;
  context?: Record<string, unknown>;
  startedAt?: string | Date;
  durationMs?: number;
}

export interface FinishResult {
  /** The trace's id on the server (null when it could not be stored). */
  traceId: number | null;
  externalId: string;
  /** Events past the server's steps per trajectory. */
  dropped: number;
  /** What stopped the upload, when it did not complete. */
  error: HindsightError | null;
}

export class TrajectoryRecorder {
  readonly externalId: string;
  readonly steps: Step[] = [];
  dropped = 0;
  private readonly header: Record<string, unknown>;
  private readonly context: Record<string, unknown>;
  private finishing: Promise<FinishResult> | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly limits: Limits,
    private readonly retry: RetryPolicy,
    private readonly options: RecorderOptions,
  ) {
    if (!options.agent || !options.task) throw new TypeError("a recorder needs a non-empty agent and task");
    this.externalId = options.externalId ?? randomUUID();
    this.context = { task_goal: options.task };
    this.header = withoutUndefined({
      external_id: this.externalId,
      agent: options.agent,
      task: options.task,
      environment: options.environment ?? [],
      started_at: new Date().toISOString(),
      task_type: options.taskType,
      intent: options.intent,
      session_id: options.sessionId,
      user: options.user,
      metadata: options.metadata,
    });
  }

  /** Record one event; it is sent when the recorder finishes. */
  record(event: StepEvent): void {
    const kind = event.kind ?? "tool_call";
    if (!STEP_KINDS.includes(kind)) throw new TypeError(`kind must be one of ${STEP_KINDS.join(", ")}; got ${kind}`);
    if (kind === "tool_call" && !event.tool) throw new TypeError("a tool_call event needs a tool");
    if (this.finishing !== null) throw new Error("this recorder was finished; start a new one for a new task");
    if (this.steps.length >= this.limits.maxSteps - 1) {
      this.dropped += 1;
      return;
    }
    const startedAt = event.startedAt instanceof Date ? event.startedAt.toISOString() : event.startedAt;
    this.steps.push(
      withoutUndefined({
        kind,
        tool: event.tool || undefined,
        arguments: event.arguments,
        observation: event.observation,
        is_error: event.isError ? true : undefined,
        error_type: event.errorType || undefined,
        content: event.content || undefined,
        context: { ...this.context, ...(event.context ?? {}) },
        started_at: startedAt ?? new Date().toISOString(),
        duration_ms: event.durationMs === undefined ? undefined : Math.max(0, Math.round(event.durationMs)),
      }),
    );
  }

  userInput(text: string): void {
    this.context.latest_user_input = text;
    this.record({ kind: "user_input", content: text });
  }

  reasoning(text: string): void {
    this.record({ kind: "llm_reasoning", content: text });
  }

  /** Time one tool call: its result is the observation; an exception marks it failed and is
   * thrown again. */
  async step<T>(tool: string, args: unknown, call: () => Promise<T> | T): Promise<T> {
    const startedAt = new Date();
    try {
      const result = await call();
      this.record({ tool, arguments: args, observation: result, startedAt, durationMs: Date.now() - startedAt.getTime() });
      return result;
    } catch (error) {
      const err = error as Error;
      this.record({
        tool,
        arguments: args,
        observation: `${err?.name ?? "Error"}: ${err?.message ?? String(error)}`,
        isError: true,
        errorType: err?.name,
        startedAt,
        durationMs: Date.now() - startedAt.getTime(),
      });
      throw error;
    }
  }

  /** Send the trajectory and complete it with `outcome`; a second call returns the first
   * one's result. */
  finish(outcome: Outcome = "success", options: { finalAnswer?: string; feedback?: string } = {}): Promise<FinishResult> {
    if (!OUTCOMES.includes(outcome)) throw new TypeError(`outcome must be one of ${OUTCOMES.join(", ")}`);
    this.finishing ??= this.send(outcome, options);
    return this.finishing;
  }

  private async send(outcome: Outcome, options: { finalAnswer?: string; feedback?: string }): Promise<FinishResult> {
    if (this.dropped) {
      this.steps.push({
        kind: "system",
        content: `hindsight client: ${this.dropped} events were dropped (the server stores at most ${this.limits.maxSteps} steps per trajectory)`,
        started_at: new Date().toISOString(),
        context: { ...this.context },
      });
    }
    let traceId: number | null = null;
    try {
      const opened = await this.call("POST", "traces/open", this.header);
      traceId = opened.id as number;
      for (const batch of this.batches()) {
        await this.call("POST", `traces/${traceId}/steps`, undefined, `{"steps":[${batch.join(",")}]}`);
      }
      await this.call(
        "POST",
        `traces/${traceId}/complete`,
        withoutUndefined({
          outcome,
          ended_at: new Date().toISOString(),
          final_answer: options.finalAnswer || undefined,
          feedback: options.feedback || undefined,
        }),
      );
      return { traceId, externalId: this.externalId, dropped: this.dropped, error: null };
    } catch (error) {
      if (!(error instanceof HindsightError)) throw error;
      return { traceId, externalId: this.externalId, dropped: this.dropped, error };
    }
  }

  /** The steps, indexed and encoded, in requests of at most `batchSize` steps and
   * `maxBatchBytes` bytes; a step too large even alone has its longest text cut. */
  private *batches(): Generator<string[]> {
    const size = Math.min(this.options.maxBatchBytes ?? 1_000_000, this.limits.maxBodyBytes) - 16;
    const count = this.options.batchSize ?? 20;
    let batch: string[] = [];
    let used = 0;
    for (const [index, step] of this.steps.entries()) {
      const encoded =
        fitStep({ index, ...step }, size, this.limits.maxObservationChars) ??
        JSON.stringify({ index, kind: "system", content: "hindsight client: a step too large to send was left out", is_error: true });
      const length = byteLength(encoded) + 1;
      if (batch.length && (batch.length >= count || used + length > size)) {
        yield batch;
        batch = [];
        used = 0;
      }
      batch.push(encoded);
      used += length;
    }
    if (batch.length) yield batch;
  }

  private call(method: string, path: string, body?: unknown, encoded?: string): Promise<any> {
    return withRetries(this.retry, () =>
      encoded === undefined ? this.transport.request(method, path, body) : this.transport.requestEncoded(method, path, encoded),
    );
  }
}

export function withoutUndefined<T extends Record<string, unknown>>(fields: T): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
