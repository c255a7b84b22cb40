// @openai/agents end to end: docs/integrations/openai-agents-js.md's example runs as written,
// twice, with the SDK's run() and its OpenAIChatCompletionsModel talking to the local
// OpenAI-compatible server. The tracing processor records the first run (model turns, tool
// calls with arguments, results, the failed call, the outcome), the site's worker reviews it
// into an experience, and the second run gets it in its instructions and from the recall tool.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agent, OpenAIResponsesModel, run, setTraceProcessors, tool } from "@openai/agents";
import OpenAI from "openai";

import { HindsightClient } from "hindsight-client";
import { HindsightTracingProcessor } from "hindsight-client/openai-agents";

import { assertFirstRun, KEY, LLM, messageText, runTwice, scriptAgent, tracesOf, unique, URL, waitUntil } from "./site.mjs";

const TASK = "Find which files this package publishes";
const ANSWER = "dist and README.md (files in package.json)";
const CALLS = [
  ["read_file", { path: ".npmignore" }],
  ["list_dir", { path: "." }],
  ["read_file", { path: "package.json" }],
];

test("a run is traced, reviewed, and recalled by the next run", async () => {
  const client = new HindsightClient(URL, KEY);
  const turns = [{ tool: "hindsight_recall", arguments: { task: TASK } }, ...CALLS.map(([tool, args]) => ({ tool, arguments: args })), { text: ANSWER }];

  const { advice, second } = await runTwice(assert, {
    page: "openai-agents-js.md",
    agent: "publish-agent",
    task: TASK,
    turns,
    client,
    check: (first) => assertFirstRun(assert, first, { task: TASK, answer: ANSWER, calls: CALLS, failure: "ENOENT", found: '"name": "hindsight-client"' }),
  });

  const system = second[0].messages[0];
  assert.equal(system.role, "system");
  assert.ok(system.content.includes(advice), system.content);
  const toolAnswers = second.at(-1).messages.filter((m) => m.role === "tool").map(messageText);
  assert.ok(toolAnswers[0].includes(advice), toolAnswers[0]); // the recall tool
});

test("a run on the Responses API is recorded from its response spans", async () => {
  const client = new HindsightClient(URL, KEY);
  const agent = unique("agents-responses");
  const task = "Find which port the worker service listens on";
  await scriptAgent(task, [{ tool: "read_config", arguments: { service: "worker" } }, { text: "port 9090 (worker.toml)" }]);
  const processor = new HindsightTracingProcessor(client, { agent });
  setTraceProcessors([processor]);
  const readConfig = tool({
    name: "read_config",
    description: "Read a service's configuration.",
    parameters: { type: "object", properties: { service: { type: "string" } }, required: ["service"], additionalProperties: false },
    strict: true,
    execute: async ({ service }) => `[${service}]\nport = 9090`,
  });
  const ports = new Agent({ name: "ports", tools: [readConfig], model: new OpenAIResponsesModel(new OpenAI({ baseURL: LLM, apiKey: "test-key" }), "m") });

  const result = await run(ports, task);
  await processor.forceFlush();

  assert.equal(result.finalOutput, "port 9090 (worker.toml)");
  const trace = await waitUntil(async () => (await tracesOf(agent)).find((t) => t.is_complete));
  assert.deepEqual([trace.task, trace.outcome], [task, "success"]);
  assert.deepEqual(
    trace.steps.map((s) => [s.kind, s.tool || s.content]),
    [
      ["user_input", task],
      ["llm_reasoning", 'calls read_config {"service": "worker"}'],
      ["tool_call", "read_config"],
      ["llm_reasoning", "port 9090 (worker.toml)"],
    ],
  );
  assert.ok(trace.steps[2].observation.includes("port = 9090"));
});
