/** A client for hindsight, the experience memory for LLM agents. No runtime dependencies;
 * Node >= 18 (the platform's fetch).
 *
 *   const client = new HindsightClient("http://localhost:8000", apiKey);
 *   const recall = await client.recall("Find out why the web container keeps restarting");
 *   const rec = client.recorder({ agent: "ops-bot", task: "..." });
 *   await rec.step("docker_logs", { name: "web" }, () => dockerLogs("web"));
 *   await rec.finish("success");
 *
 * Framework integrations: `hindsight-client/ai-sdk` (Vercel AI SDK) and
 * `hindsight-client/openai-agents` (OpenAI Agents SDK). */

export { HindsightClient } from "./client.js";
export type { ClientOptions, RecallOptions, WarningOptions } from "./client.js";
export {
  NOTHING_RECALLED,
  RECALL_TOOL_DESCRIPTION,
  RECALL_TOOL_NAME,
  ToolCallWarnings,
  recallBlock,
  recallToolAnswer,
  warningText,
} from "./common.js";
export type { RecallScope, WarningCheckOptions } from "./common.js";
export { ApiError, ConnectionFailed, HindsightError, InvalidRequest, RequestTooLarge } from "./errors.js";
export { DEFAULT_LIMITS } from "./limits.js";
export type { Limits } from "./limits.js";
export type { Recall, RecallItem, ToolWarning } from "./models.js";
export { OUTCOMES, STEP_KINDS, TrajectoryRecorder } from "./recorder.js";
export type { FinishResult, Outcome, RecorderOptions, StepEvent, StepKind } from "./recorder.js";
export { DEFAULT_RETRY } from "./transport.js";
export type { RetryPolicy } from "./transport.js";
