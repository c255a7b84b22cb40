/** OpenAI Agents SDK for JavaScript (`@openai/agents`): a tracing processor turns each trace
 * (one `run()`, or a `withTrace()` block around several) into one trajectory, and recall is a
 * function tool.
 *
 *   const hindsight = new HindsightTracingProcessor(client, { agent: "release-agent" });
 *   setTraceProcessors([hindsight]);   // or addTraceProcessor(hindsight) to keep OpenAI's
 *   await run(agent, task);
 *   await hindsight.forceFlush();
 *
 * Spans become steps in the order they started: a generation (Chat Completions) or response
 * (Responses API) span is an `llm_reasoning` step (its text and the tool calls it asked for),
 * a function span a `tool_call` step (arguments, output, failed when the span has an error), a
 * handoff or a tripped guardrail a `system` step. The SDK has no outcome: a trace whose agent
 * span carries an error is a `failure`, any other a `success`. The task is the first user
 * message the model was given (the trace's name when there is none), the session the trace's
 * `groupId`, the user the trace metadata's `user_id`. `@openai/agents` is a peer dependency;
 * this module imports it only for `tool()`. */

import { type Span, type Trace, type TracingProcessor, tool } from "@openai/agents";

import type { HindsightClient } from "./client.js";
import { parseArguments, RECALL_TOOL_DESCRIPTION, RECALL_TOOL_NAME, type RecallScope, recallToolAnswer, textOf } from "./common.js";
import type { FinishResult, RecorderOptions, StepEvent } from "./recorder.js";

/** A function tool the model calls with the task in its own words. */
export function recallTool(client: HindsightClient, scope: RecallScope = {}) {
  return tool({
    name: RECALL_TOOL_NAME,
    description: RECALL_TOOL_DESCRIPTION,
    parameters: {
      type: "object",
      properties: { task: { type: "string", description: "the task, in your own words" } },
      required: ["task"],
      additionalProperties: false,
    },
    strict: true,
    execute: async (input: any) => recallToolAnswer(client, String(input?.task ?? ""), scope),
  });
}

export interface TracingProcessorOptions extends Partial<Omit<RecorderOptions, "task" | "externalId">> {
  /** Tools not recorded (by default the recall tool). */
  ignoreTools?: string[];
}

type AnySpan = Span<any>;

/** Sends each finished trace as one trajectory (see the module's comment). The SDK (0.20)
 * never ends a trace whose run threw, so a top-level span ending with an error ends its trace
 * here: the trajectory is sent as a failure, and later spans of that trace are not recorded. */
export class HindsightTracingProcessor implements TracingProcessor {
  private readonly open = new Map<string, { trace: Trace; spans: AnySpan[] }>();
  private readonly sending: Promise<FinishResult>[] = [];
  private readonly ignoreTools: Set<string>;

  constructor(
    private readonly client: HindsightClient,
    private readonly options: TracingProcessorOptions = {},
  ) {
    this.ignoreTools = new Set(options.ignoreTools ?? [RECALL_TOOL_NAME]);
  }

  async onTraceStart(trace: Trace): Promise<void> {
    this.open.set(trace.traceId, { trace, spans: [] });
  }

  async onSpanStart(): Promise<void> {}

  async onSpanEnd(span: AnySpan): Promise<void> {
    this.open.get(span.traceId)?.spans.push(span);
    if (span.parentId === null && span.error) this.end(span.traceId);
  }

  async onTraceEnd(trace: Trace): Promise<void> {
    this.end(trace.traceId);
  }

  private end(traceId: string): void {
    const open = this.open.get(traceId);
    this.open.delete(traceId);
    if (!open?.spans.length) return;
    try {
      this.sending.push(this.send(open.trace, open.spans));
    } catch (error) {
      console.warn(`hindsight: trace ${traceId} could not be recorded: ${(error as Error).message}`);
    }
  }

  private send(trace: Trace, unordered: AnySpan[]): Promise<FinishResult> {
    const spans = [...unordered].sort((a, b) => position(a).localeCompare(position(b)));
    const task = taskOf(spans) || trace.name;
    const user = trace.metadata?.user_id ?? trace.metadata?.user;
    const { ignoreTools: _ignored, ...recorderOptions } = this.options;
    const recorder = this.client.recorder({
      ...recorderOptions,
      agent: this.options.agent ?? agentOf(spans) ?? trace.name,
      task,
      sessionId: this.options.sessionId ?? trace.groupId ?? undefined,
      user: this.options.user ?? (user ? String(user) : undefined),
      metadata: { workflow: trace.name, openai_trace_id: trace.traceId, ...(this.options.metadata ?? {}) },
    });
    recorder.userInput(task);
    for (const span of spans) {
      const step = stepOf(span, this.ignoreTools);
      if (step) recorder.record(step);
    }
    return recorder.finish(outcomeOf(spans), { finalAnswer: finalAnswer(spans) || undefined });
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
  }

  /** Wait until the finished traces are stored (or failed to be). */
  async forceFlush(): Promise<void> {
    await Promise.all(this.sending.splice(0));
  }
}

// ------------------------------------------------------------------ spans as steps

export function stepOf(span: AnySpan, ignoreTools: Set<string>): StepEvent | null {
  const data = span.spanData;
  const timing = { startedAt: span.startedAt ?? undefined, durationMs: durationMs(span) };
  switch (data.type) {
    case "generation":
    case "response":
      return { kind: "llm_reasoning", content: turnText(data) || "(empty answer)", context: data.model ? { model: data.model } : {}, ...timing };
    case "function": {
      if (ignoreTools.has(data.name)) return null;
      const error = span.error;
      const detail = error ? (error.data?.error ?? error.message) : "";
      return {
        kind: "tool_call",
        tool: data.name,
        arguments: parseArguments(data.input),
        observation: [textOf(data.output), detail].filter(Boolean).join("\n"),
        isError: error !== null,
        ...timing,
      };
    }
    case "handoff":
      return { kind: "system", content: `handoff from ${data.from_agent} to ${data.to_agent}`, ...timing };
    case "guardrail":
      return data.triggered ? { kind: "system", content: `guardrail ${data.name} tripped`, isError: true, ...timing } : null;
    case "agent":
      return span.error ? { kind: "system", content: `agent ${data.name} stopped: ${span.error.message}`, isError: true, ...timing } : null;
    default:
      return null;
  }
}

/** A model turn: its text, then each tool call it asked for. */
export function turnText(data: Record<string, any>): string {
  const lines: string[] = [];
  if (data.type === "generation") {
    for (const output of data.output ?? []) {
      const message = output?.choices?.[0]?.message ?? output; // a whole response, or a message
      lines.push(textOf(message?.content));
      for (const call of message?.tool_calls ?? []) lines.push(`calls ${call.function?.name} ${call.function?.arguments}`);
    }
  } else {
    for (const item of data._response?.output ?? []) {
      if (item.type === "message") lines.push(...(item.content ?? []).map((part: any) => part.text ?? ""));
      if (item.type === "function_call") lines.push(`calls ${item.name} ${item.arguments}`);
    }
  }
  return lines.filter(Boolean).join("\n");
}

export function taskOf(spans: AnySpan[]): string {
  for (const span of spans) {
    const data = span.spanData;
    const input = data.type === "generation" ? data.input : data.type === "response" ? data._input : undefined;
    if (typeof input === "string") return input;
    for (const message of input ?? []) {
      if (message?.role === "user") return contentText(message.content);
    }
  }
  return "";
}

function contentText(content: unknown): string {
  if (Array.isArray(content)) return content.map((part) => (part && typeof part === "object" ? (part.text ?? "") : "")).join("\n").trim();
  return textOf(content);
}

function finalAnswer(spans: AnySpan[]): string {
  for (const span of [...spans].reverse()) {
    if (span.spanData.type !== "generation" && span.spanData.type !== "response") continue;
    const text = turnText(span.spanData);
    if (text && !text.startsWith("calls ")) return text;
  }
  return "";
}

function agentOf(spans: AnySpan[]): string | undefined {
  return spans.find((span) => span.spanData.type === "agent")?.spanData.name;
}

function outcomeOf(spans: AnySpan[]): "success" | "failure" {
  return spans.some((span) => span.spanData.type === "agent" && span.error) ? "failure" : "success";
}

/** Where a span's step goes: when it started, or for an agent span (a step only when it
 * failed) when it ended. */
function position(span: AnySpan): string {
  return (span.spanData.type === "agent" ? span.endedAt : span.startedAt) ?? "";
}

function durationMs(span: AnySpan): number | undefined {
  if (!span.startedAt || !span.endedAt) return undefined;
  return Math.max(0, Date.parse(span.endedAt) - Date.parse(span.startedAt));
}
