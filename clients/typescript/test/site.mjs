// What the tests share: the live site (HINDSIGHT_URL, HINDSIGHT_API_KEY with the ingest and
// recall scopes), the local OpenAI-compatible server playing the agents' model
// (OPENAI_BASE_URL; its /test/ endpoints script it), and the docs examples, run as written.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const URL = process.env.HINDSIGHT_URL ?? "http://127.0.0.1:8000";
// The key needs ingest, recall and read (the tests read their trajectories back).
export const KEY = process.env.HINDSIGHT_API_KEY ?? "";
export const LLM = process.env.OPENAI_BASE_URL ?? "";
export const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
const DOCS = join(PACKAGE, "..", "..", "docs", "integrations");

export function unique(prefix) {
  return `${prefix}-${Math.random().toString(36).slice(2, 12)}`;
}

export async function api(path) {
  const response = await fetch(`${URL}/api/v1/${path}`, { headers: { Authorization: `Bearer ${KEY}` } });
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

export async function waitUntil(predicate, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The agent's traces, oldest first, with their steps. */
export async function tracesOf(agent) {
  const { items } = await api(`traces?agent=${agent}&limit=200`);
  return Promise.all(items.reverse().map((trace) => api(`traces/${trace.id}`)));
}

/** Wait until the agent has `count` traces, all reviewed by the site's worker. */
export function reviewedTracesOf(agent, count) {
  return waitUntil(async () => {
    const traces = await tracesOf(agent);
    return traces.length === count && traces.every((t) => t.review_status === "reviewed") ? traces : null;
  });
}

/** Script the model for conversations whose first user message is `task`. */
export async function scriptAgent(task, turns) {
  const response = await fetch(`${LLM}/test/agent-script`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ task, turns }),
  });
  if (!response.ok) throw new Error(`scripting the model: ${response.status}`);
}

/** The chat requests the model received for `task`, in order. The fake model is shared with
 * the Python tests, and it also records Responses API bodies (`input`, no `messages`): those
 * are never this task's chat requests. */
export async function chatRequests(task) {
  const { requests } = await (await fetch(`${LLM}/test/chat-requests`)).json();
  return requests.filter(
    (body) =>
      Array.isArray(body.messages) &&
      contentText(body.messages.find((m) => m.role === "user")?.content) === task,
  );
}

function contentText(content) {
  return typeof content === "string" ? content : (content ?? []).map((part) => part.text ?? "").join("");
}

/** The page's only code block (a page must hold exactly one). */
export function snippet(page) {
  const blocks = [...readFileSync(join(DOCS, page), "utf8").matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)];
  if (blocks.length !== 1) throw new Error(`${page} should hold exactly one code block, has ${blocks.length}`);
  return { language: blocks[0][1], code: blocks[0][2] };
}

/** Run the page's example as written: an ES module evaluated by node in this package's
 * directory (so `hindsight-client` and the frameworks resolve as they would for a user). */
export async function runSnippet(page) {
  const { language, code } = snippet(page);
  if (language !== "js") throw new Error(`${page}: the example should be a js block`);
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", code], {
    cwd: PACKAGE,
    env: process.env,
    timeout: 60_000,
  });
  return stdout;
}

/** An HTTP relay in front of the site that answers the first `failures` requests 503 itself
 * (Retry-After: 0) and notes every request (path, status, body, size). */
export async function startRelay({ failures = 0 } = {}) {
  const seen = [];
  const server = createServer(async (request, response) => {
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const note = { path: request.url, size: body.length, body: body.toString() };
    seen.push(note);
    if (failures-- > 0) {
      note.status = 503;
      response.writeHead(503, { "Content-Type": "application/json", "Retry-After": "0" });
      return response.end('{"detail": "down for a moment"}');
    }
    const upstream = await fetch(URL + request.url, {
      method: request.method,
      headers: { Authorization: request.headers.authorization, "Content-Type": "application/json" },
      body: body.length ? body : undefined,
    });
    note.status = upstream.status;
    response.writeHead(upstream.status, { "Content-Type": "application/json" });
    response.end(await upstream.text());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, seen, close: () => server.close() };
}

/** What every framework's first run of its example must have recorded: the task, the outcome
 * and answer, a user input, five model turns (four asking for a tool, one answer), the tool
 * calls in order with their arguments (the first one failed), and what the last one found. */
export function assertFirstRun(assert, trace, { task, answer, calls, failure, found }) {
  assert.deepEqual([trace.task, trace.outcome, trace.final_answer], [task, "success", answer]);
  const toolSteps = trace.steps.filter((s) => s.tool);
  assert.deepEqual(
    toolSteps.map((s) => [s.tool, s.arguments, s.is_error]),
    calls.map(([tool, args], n) => [tool, args, n === 0]),
  );
  assert.ok(toolSteps[0].observation.includes(failure), toolSteps[0].observation);
  assert.ok(toolSteps.at(-1).observation.includes(found), toolSteps.at(-1).observation);
  const kinds = trace.steps.map((s) => s.kind);
  assert.deepEqual(kinds.slice(0, 2), ["user_input", "llm_reasoning"]);
  const turns = trace.steps.filter((s) => s.kind === "llm_reasoning").map((s) => s.content);
  assert.deepEqual(
    turns.map((text) => (text.startsWith("calls ") ? text.split(" ")[1] : text)),
    ["hindsight_recall", ...calls.map(([tool]) => tool), answer],
  );
}

/** Run an example twice, the model scripted; returns what the second run's model was sent
 * and the advice it was given (from the first run, reviewed and distilled by the site). */
export async function runTwice(assert, { page, agent, task, turns, client, check }) {
  await scriptAgent(task, turns);
  await runSnippet(page);
  const [first] = await reviewedTracesOf(agent, 1);
  check(first);
  // The first run's experience: its source is that run (the advice names no task). The prompt
  // block cuts each line, so its first 60 characters are what the next run must be given.
  const fromFirst = (item) => item.sources.includes(first.external_id);
  const items = await waitUntil(async () => {
    const recall = await client.recall(task, { environment: ["bare-metal"], includeCandidates: true });
    return recall.items.find(fromFirst) ? recall.items : null;
  });
  const found = items.find(fromFirst);
  const advice = (found.replay || found.advice).slice(0, 60);
  const before = (await chatRequests(task)).length;
  await runSnippet(page);
  const second = (await chatRequests(task)).slice(before);
  await reviewedTracesOf(agent, 2);
  return { advice, second };
}

/** The text of a chat message's content (a string, or parts). */
export function messageText(message) {
  return contentText(message.content);
}
