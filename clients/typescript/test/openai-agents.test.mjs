// @openai/agents end to end: docs/integrations/openai-agents-js.md's example runs as written,
// twice, with the SDK's run() and its OpenAIChatCompletionsModel talking to the local
// OpenAI-compatible server. The tracing processor records the first run (model turns, tool
// calls with arguments, results, the failed call, the outcome), the site's worker reviews it
// into an experience, and the second run gets it in its instructions and from the recall tool.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HindsightClient } from "hindsight-client";

import { assertFirstRun, KEY, messageText, runTwice, URL } from "./site.mjs";

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
