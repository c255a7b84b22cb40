// The TypeScript client against the live site: traces stored and read back, batches within
// the limits, the size limit enforced before sending, the server's 422, retries of a
// transient answer, and a recorded run reviewed, recalled and warning.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HindsightClient, InvalidRequest, RequestTooLarge } from "hindsight-client";

import { KEY, URL, reviewedTracesOf, startRelay, tracesOf, unique, waitUntil } from "./site.mjs";

const client = new HindsightClient(URL, KEY);

function traceBody(externalId, agent, steps = 2) {
  return {
    external_id: externalId,
    agent,
    task: "Find out why the web container keeps restarting",
    environment: ["docker"],
    outcome: "success",
    steps: Array.from({ length: steps }, (_, index) => ({ index, kind: "tool_call", tool: "docker_logs", arguments: { tail: index } })),
  };
}

test("a trace is stored once and read back with its steps", async () => {
  const agent = unique("ts-agent");
  const externalId = unique("run");
  const first = await client.sendTrace(traceBody(externalId, agent));
  const again = await client.sendTrace(traceBody(externalId, agent));

  assert.equal(again.id, first.id);
  const stored = await client.getTrace(first.id);
  assert.deepEqual(stored.steps.map((s) => s.arguments), [{ tail: 0 }, { tail: 1 }]);
});

test("many traces go in as many batches as the limits need, results in order", async () => {
  const batching = new HindsightClient(URL, KEY, { limits: { maxBatch: 2 } });
  const agent = unique("ts-batch");
  const ids = Array.from({ length: 5 }, () => unique("run"));

  const results = await batching.sendTraces(ids.map((id) => traceBody(id, agent)));

  assert.deepEqual(results.map((r) => r.external_id), ids);
  assert.deepEqual([...new Set(results.map((r) => r.status))], ["created"]);
  assert.equal((await tracesOf(agent)).length, 5);
});

test("a body over the limit is refused before it is sent", async () => {
  const small = new HindsightClient(URL, KEY, { limits: { maxBodyBytes: 2000 } });
  const body = traceBody(unique("run"), unique("ts-big"));
  body.steps[0].observation = "x".repeat(5000);

  await assert.rejects(small.sendTrace(body), (error) => error instanceof RequestTooLarge && error.clientSide);
  assert.deepEqual(await tracesOf(body.agent), []);
});

test("an invalid trace is a 422 naming the field", async () => {
  const body = traceBody(unique("run"), unique("ts-invalid"));
  delete body.agent;

  await assert.rejects(client.sendTrace(body), (error) => {
    assert.ok(error instanceof InvalidRequest);
    assert.equal(error.status, 422);
    assert.match(JSON.stringify(error.detail), /agent/);
    return true;
  });
});

test("a 503 with Retry-After is retried and the call succeeds", async (t) => {
  const relay = await startRelay({ failures: 1 });
  t.after(() => relay.close());
  const relayed = new HindsightClient(relay.url, KEY);

  const answer = await relayed.recall("Find out why the web container keeps restarting");

  assert.equal(typeof answer.promptBlock, "string");
  assert.deepEqual(relay.seen.map((r) => [r.path, r.status]), [
    ["/api/v1/recall", 503],
    ["/api/v1/recall", 200],
  ]);
});

test("a recorder cuts what is over the limits and keeps every request within its batch size", async (t) => {
  const relay = await startRelay();
  t.after(() => relay.close());
  const relayed = new HindsightClient(relay.url, KEY);
  const agent = unique("ts-limits");
  const rec = relayed.recorder({ agent, task: "Read the access log", maxBatchBytes: 80_000 });
  rec.record({ tool: "read_file", arguments: { path: "/var/log/access.log" }, observation: "x".repeat(70_000) });
  rec.reasoning("z".repeat(100_000));
  for (let n = 0; n < 30; n++) rec.record({ tool: "grep", arguments: { n }, observation: "y".repeat(1_000) });

  const finished = await rec.finish("success");

  assert.equal(finished.error, null);
  const batches = relay.seen.filter((r) => r.path.endsWith("/steps"));
  assert.ok(batches.length >= 2 && batches.every((r) => r.size <= 80_000), JSON.stringify(batches.map((r) => r.size)));
  const sent = batches.flatMap((r) => JSON.parse(r.body).steps);
  assert.deepEqual(sent.map((step) => step.index), [...Array(32).keys()]);
  assert.ok(sent[0].observation.endsWith("[... cut by the client at 65536 chars]"));
  assert.ok(sent[1].content.endsWith("chars: over the limit]") && sent[1].content.length < 80_000);
  const [trace] = await tracesOf(agent);
  assert.equal((await relayed.getTrace(trace.id)).steps.length, 32);
});

test("a recorded run is reviewed, recalled, and its failures warn", async () => {
  const agent = unique("ts-recorder");
  const task = "Find out why the TLS certificate renewal fails";
  const rec = client.recorder({ agent, task, environment: ["bare-metal"] });
  rec.userInput(task);
  for (const path of ["/etc/letsencrypt/cli.ini", "/etc/letsencrypt/renew.conf"]) {
    await assert.rejects(
      rec.step("read_file", { path }, () => {
        throw Object.assign(new Error(`no such file: ${path}`), { name: "FileNotFoundError" });
      }),
    );
  }
  await rec.step("list_dir", { path: "/etc/letsencrypt/renewal" }, () => ["shop.example.conf"]);
  await rec.step("read_file", { path: "/etc/letsencrypt/renewal/shop.example.conf" }, () => "webroot-path = /var/www/old");
  const finished = await rec.finish("success", { finalAnswer: "the webroot path in shop.example.conf is wrong" });

  assert.equal(finished.error, null);
  const [trace] = await reviewedTracesOf(agent, 1);
  assert.equal(trace.outcome, "success");
  assert.deepEqual(trace.steps.map((s) => s.is_error), [false, true, true, false, false]);
  const items = await waitUntil(async () => {
    const recall = await client.recall("Why does the certificate renewal fail?", { environment: ["bare-metal"], includeCandidates: true });
    return recall.items.length ? recall.items : null;
  });
  // Its experience comes back: the run is its source, its advice is about the reads.
  const learned = items.find((item) => item.sources.includes(trace.external_id));
  assert.ok(learned && learned.advice.includes("read_file"), JSON.stringify(items));
  const warnings = await client.checkToolCall("read_file", { path: "/etc/letsencrypt/cli.ini" });
  assert.ok(warnings.some((w) => w.message.includes("read_file")), JSON.stringify(warnings));
});
