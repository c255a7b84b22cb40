// Runs that throw are recorded as failures: an AI SDK run whose model cannot be reached, and
// an @openai/agents run whose tool error stops it (the model scripted by the local server).
import assert from "node:assert/strict";
import { test } from "node:test";

import { createOpenAI } from "@ai-sdk/openai";
import { Agent, OpenAIChatCompletionsModel, run, setTraceProcessors, tool, withTrace } from "@openai/agents";
import { generateText } from "ai";
import OpenAI from "openai";

import { HindsightClient } from "hindsight-client";
import { HindsightAiSdkRecorder } from "hindsight-client/ai-sdk";
import { HindsightTracingProcessor } from "hindsight-client/openai-agents";

import { KEY, LLM, scriptAgent, tracesOf, unique, URL, waitUntil } from "./site.mjs";

const client = new HindsightClient(URL, KEY);

async function completedTraceOf(agent) {
  return waitUntil(async () => (await tracesOf(agent)).find((trace) => trace.is_complete));
}

test("an AI SDK run that throws is a failure with its error as the last step", async () => {
  const agent = unique("ai-sdk-failing");
  const task = "Summarise the release notes";
  const hindsight = new HindsightAiSdkRecorder(client, { agent, task });
  const unreachable = createOpenAI({ baseURL: "http://127.0.0.1:9/v1", apiKey: "test-key" });

  await assert.rejects(async () => {
    try {
      await generateText({ model: unreachable.chat("m"), prompt: task, maxRetries: 0, onStepFinish: hindsight.onStepFinish });
    } catch (error) {
      await hindsight.fail(error);
      throw error;
    }
  });

  const trace = await completedTraceOf(agent);
  assert.equal(trace.outcome, "failure");
  assert.deepEqual(trace.steps.map((s) => s.kind), ["user_input", "system"]);
  assert.ok(trace.steps[1].is_error && trace.steps[1].content.startsWith("the run stopped with"));
});

test("an @openai/agents run stopped by a tool error is a failure", async () => {
  const agent = unique("agents-failing");
  const task = "Rotate the cache credentials";
  await scriptAgent(task, [{ tool: "rotate", arguments: { cache: "sessions" } }, { text: "-" }]);
  const processor = new HindsightTracingProcessor(client, { agent });
  setTraceProcessors([processor]);
  const rotate = tool({
    name: "rotate",
    description: "Rotate a cache's credentials.",
    parameters: { type: "object", properties: { cache: { type: "string" } }, required: ["cache"], additionalProperties: false },
    strict: true,
    execute: async ({ cache }) => {
      throw new Error(`vault sealed, cannot rotate ${cache}`);
    },
    errorFunction: null, // the error stops the run
  });
  const rotator = new Agent({
    name: "rotator",
    tools: [rotate],
    model: new OpenAIChatCompletionsModel(new OpenAI({ baseURL: LLM, apiKey: "test-key" }), "m"),
  });

  await assert.rejects(withTrace("rotation", () => run(rotator, task), { groupId: "session-9", metadata: { user_id: "ada" } }), /vault sealed/);
  await processor.forceFlush();

  const trace = await completedTraceOf(agent);
  assert.deepEqual([trace.task, trace.outcome, trace.user, trace.session_id], [task, "failure", "ada", "session-9"]);
  const toolStep = trace.steps.find((s) => s.tool);
  assert.deepEqual([toolStep.tool, toolStep.arguments, toolStep.is_error], ["rotate", { cache: "sessions" }, true]);
  assert.ok(trace.steps.at(-1).kind === "system" && trace.steps.at(-1).is_error);
});
