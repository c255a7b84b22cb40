/** Vercel AI SDK (`ai`): record each step of a `generateText` / `streamText` run as one
 * trajectory, recall as a tool, and warnings added to a tool's result.
 *
 *   const hindsight = new HindsightAiSdkRecorder(client, { agent: "build-agent", task });
 *   const result = await generateText({ model, prompt: task, tools: withWarnings(tools, client),
 *     onStepFinish: hindsight.onStepFinish });
 *   await hindsight.finish(result);
 *
 * Each step is an `llm_reasoning` step (its text and the tool calls it asked for), then a
 * `tool_call` step per tool result or tool error of that step. The SDK has no outcome: a run
 * that ended with finish reason `stop` is a `success`, one that stopped otherwise (the step
 * limit while still calling tools, `length`, a content filter) `partial`, and `fail(error)`
 * records a thrown run as a `failure`. `ai` is a peer dependency, imported only here. */

import { jsonSchema, tool, type StepResult, type Tool, type ToolSet } from "ai";

import type { HindsightClient } from "./client.js";
import {
  RECALL_TOOL_DESCRIPTION,
  RECALL_TOOL_NAME,
  type RecallScope,
  recallToolAnswer,
  textOf,
  ToolCallWarnings,
  type WarningCheckOptions,
} from "./common.js";
import type { FinishResult, RecorderOptions, TrajectoryRecorder } from "./recorder.js";

/** A tool the model calls with the task in its own words; it answers the recalled advice. */
export function recallTool(client: HindsightClient, scope: RecallScope = {}): Tool<{ task: string }, string> {
  return tool({
    description: RECALL_TOOL_DESCRIPTION,
    inputSchema: jsonSchema<{ task: string }>({
      type: "object",
      properties: { task: { type: "string", description: "the task, in your own words" } },
      required: ["task"],
      additionalProperties: false,
    }),
    execute: async ({ task }) => recallToolAnswer(client, task, scope),
  });
}

/** The same tools, each call checked against the project's frequent failure patterns while
 * it runs; a match is appended to a text result, so the model reads it before its next move. */
export function withWarnings<TOOLS extends ToolSet>(
  tools: TOOLS,
  client: HindsightClient,
  options: WarningCheckOptions = {},
): TOOLS {
  const warnings = new ToolCallWarnings(client, options);
  const wrapped: Record<string, Tool> = {};
  for (const [name, original] of Object.entries(tools) as [string, Tool][]) {
    const execute = original.execute;
    if (execute === undefined || name === RECALL_TOOL_NAME) {
      wrapped[name] = original;
      continue;
    }
    wrapped[name] = {
      ...original,
      execute: async (input: unknown, callOptions: any) => {
        const pending = warnings.check(name, input);
        const result = await execute(input, callOptions);
        const note = await warnings.note(pending);
        return note && typeof result === "string" ? `${result}\n\n${note}` : result;
      },
    } as Tool;
  }
  return wrapped as TOOLS;
}

export interface AiSdkRecorderOptions extends RecorderOptions {
  /** Tools not recorded (by default the recall tool: asking memory is not the task's path). */
  ignoreTools?: string[];
}

/** Records one run (see the module's comment). */
export class HindsightAiSdkRecorder {
  readonly recorder: TrajectoryRecorder;
  private readonly ignoreTools: Set<string>;

  constructor(client: HindsightClient, options: AiSdkRecorderOptions) {
    this.recorder = client.recorder(options);
    this.ignoreTools = new Set(options.ignoreTools ?? [RECALL_TOOL_NAME]);
    this.recorder.userInput(options.task);
  }

  /** Pass as `onStepFinish`. */
  readonly onStepFinish = (step: StepResult<ToolSet>): void => {
    const lines: string[] = [];
    for (const part of step.content) {
      if (part.type === "text" && part.text) lines.push(part.text);
      if (part.type === "tool-call") lines.push(`calls ${part.toolName} ${JSON.stringify(part.input)}`);
    }
    this.recorder.reasoning(lines.join("\n") || "(empty answer)");
    for (const part of step.content) {
      if ((part.type !== "tool-result" && part.type !== "tool-error") || this.ignoreTools.has(part.toolName)) continue;
      const failed = part.type === "tool-error";
      this.recorder.record({
        tool: part.toolName,
        arguments: part.input,
        observation: failed ? errorText(part.error) : textOf(part.output),
        isError: failed,
        errorType: failed ? ((part.error as Error)?.name ?? "Error") : undefined,
      });
    }
  };

  /** Complete the trajectory with the run's result (its text is the final answer). */
  finish(result: { text: string; finishReason: string }): Promise<FinishResult> {
    return this.recorder.finish(result.finishReason === "stop" ? "success" : "partial", { finalAnswer: result.text });
  }

  /** Complete the trajectory of a run that threw. */
  fail(error: unknown): Promise<FinishResult> {
    this.recorder.record({ kind: "system", content: `the run stopped with ${errorText(error)}`, isError: true });
    return this.recorder.finish("failure");
  }
}

function errorText(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return textOf(error);
}
