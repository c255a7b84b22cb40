// The Vercel AI SDK end to end: docs/integrations/vercel-ai-sdk.md's example runs as written,
// twice, with `ai`'s generateText and @ai-sdk/openai's chat model talking to the local
// OpenAI-compatible server. The first run is recorded step by step (model turns, tool calls
// with arguments, results, the failed call, the outcome) and reviewed into an experience by
// the site's worker; the second gets it in its system prompt and from the recall tool, and
// is warned about the call that failed.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HindsightClient } from "hindsight-client";

import { assertFirstRun, KEY, messageText, runTwice, URL } from "./site.mjs";

const TASK = "Find the command that builds this package";
const ANSWER = "npm run build (tsc -p tsconfig.json)";
const CALLS = [
  ["read_file", { path: "Makefile" }],
  ["list_dir", { path: "." }],
  ["read_file", { path: "package.json" }],
];

test("a run is recorded, reviewed, and recalled by the next run", async () => {
  const client = new HindsightClient(URL, KEY);
  const turns = [{ tool: "hindsight_recall", arguments: { task: TASK } }, ...CALLS.map(([tool, args]) => ({ tool, arguments: args })), { text: ANSWER }];

  const { advice, second } = await runTwice(assert, {
    page: "vercel-ai-sdk.md",
    agent: "build-agent",
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
  assert.ok(toolAnswers[3].includes("[hindsight]") && toolAnswers[3].includes("read_file"), toolAnswers[3]); // warned
  assert.ok(!toolAnswers[2].includes("[hindsight]"), toolAnswers[2]); // list_dir never failed
});
