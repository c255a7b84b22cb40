/** What every framework integration shares: recall as a prompt block and as a tool's answer,
 * and the warning check that runs beside a tool call. Memory never stops an agent: a recall or
 * a check that fails is logged and answers nothing. */

import type { HindsightClient, RecallOptions } from "./client.js";
import { HindsightError } from "./errors.js";
import type { ToolWarning } from "./models.js";

export const RECALL_TOOL_NAME = "hindsight_recall";
export const RECALL_TOOL_DESCRIPTION =
  "Recall what earlier runs of similar tasks taught: which tools and steps worked, and which calls failed. " +
  "Call it once before you start, with the task in your own words.";
export const NOTHING_RECALLED = "No experience recorded for this kind of task yet.";

/** What a recall asks besides the task. */
export type RecallScope = RecallOptions;

/** The recall's prompt block for `task` ("" when nothing is recalled or the recall failed). */
export async function recallBlock(client: HindsightClient, task: string, scope: RecallScope = {}): Promise<string> {
  try {
    return (await client.recall(task, scope)).promptBlock;
  } catch (error) {
    if (!(error instanceof HindsightError)) throw error;
    console.warn(`hindsight recall failed, the agent goes on without it: ${error.message}`);
    return "";
  }
}

export async function recallToolAnswer(client: HindsightClient, task: string, scope: RecallScope = {}): Promise<string> {
  return (await recallBlock(client, task, scope)) || NOTHING_RECALLED;
}

export function warningText(warnings: ToolWarning[]): string {
  return ["[hindsight] Before relying on this result, note past failures of similar calls:", ...warnings.map((w) => `- ${w.text}`)].join(
    "\n",
  );
}

export interface WarningCheckOptions {
  environment?: string[];
  agent?: string;
  /** Milliseconds a check may still take once the tool has ended. */
  timeoutMs?: number;
}

/** Checks a planned tool call against the project's frequent failure patterns while the tool
 * runs: `const pending = warnings.check(tool, args)`, run the tool, then `await
 * warnings.found(pending)`. A check still unanswered `timeoutMs` after the tool ended is
 * dropped. */
export class ToolCallWarnings {
  constructor(
    readonly client: HindsightClient,
    readonly options: WarningCheckOptions = {},
  ) {}

  check(tool: string, args: unknown): Promise<ToolWarning[]> {
    const timeoutMs = this.options.timeoutMs ?? 500;
    return this.client
      .checkToolCall(tool, args, { environment: this.options.environment, agent: this.options.agent, timeoutMs })
      .catch((error) => {
        if (!(error instanceof HindsightError)) throw error;
        console.warn(`hindsight warning check of ${tool} failed: ${error.message}`);
        return [];
      });
  }

  async found(pending: Promise<ToolWarning[]>): Promise<ToolWarning[]> {
    const timeoutMs = this.options.timeoutMs ?? 500;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<ToolWarning[]>((resolve) => {
      timer = setTimeout(() => resolve([]), timeoutMs);
    });
    try {
      return await Promise.race([pending, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The note to append to the tool's result ("" when nothing matched in time). */
  async note(pending: Promise<ToolWarning[]>): Promise<string> {
    const found = await this.found(pending);
    return found.length ? warningText(found) : "";
  }
}

export function parseArguments(raw: unknown): unknown {
  if (typeof raw !== "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function textOf(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}
