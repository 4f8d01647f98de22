// MemorybankSaver: LangGraph's own checkpoint validation suite (its every spec, run by
// vitest as the package requires), and a compiled graph that resumes from the service.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { MemoryBank, MemorybankSaver } from "../dist/index.js";
import { serve } from "./harness.mjs";

test("@langchain/langgraph-checkpoint-validation", { timeout: 900_000 }, () => {
  const done = spawnSync(
    "npx",
    [
      "vitest",
      "run",
      "--globals",
      "--root",
      ".",
      "test/vitest/langgraph-validation.spec.mjs",
      "--reporter=json",
      "--testTimeout=60000",
      "--hookTimeout=120000",
    ],
    { cwd: new URL("..", import.meta.url), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  const start = done.stdout.indexOf("{");
  assert.ok(start >= 0, `no vitest report:\n${done.stderr}`);
  const report = JSON.parse(done.stdout.slice(start));
  const failed = report.testResults.flatMap((f) => f.assertionResults).filter((t) => t.status === "failed");
  console.log(
    `# checkpoint validation: ${report.numPassedTests} passed, ${report.numFailedTests} failed of ${report.numTotalTests}`,
  );
  for (const t of failed) console.log(`#   failed: ${t.fullName}`);
  assert.ok(report.numTotalTests >= 726, "the package's whole suite ran, with the delta-history specs");
  assert.equal(report.numFailedTests, 0, failed.map((t) => t.fullName).join("\n"));
  assert.equal(report.numPassedTests, report.numTotalTests, "no spec skipped");
});

describe("a compiled graph with checkpointer: MemorybankSaver", () => {
  let server;
  let mb;
  before(async () => {
    server = await serve("sqlite");
    mb = new MemoryBank({ baseUrl: server.baseUrl, apiKey: await server.key("graphs") });
  });
  after(async () => {
    await server?.stop();
  });

  test("state survives across invocations and saver instances; threads stay apart", async () => {
    const State = Annotation.Root({
      log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const build = (checkpointer) =>
      new StateGraph(State)
        .addNode("echo", (s) => ({ log: [`seen ${s.log.length}`] }))
        .addEdge(START, "echo")
        .addEdge("echo", END)
        .compile({ checkpointer });
    const config = { configurable: { thread_id: "g1" } };
    await build(new MemorybankSaver(mb)).invoke({ log: ["hi"] }, config);
    const second = await build(new MemorybankSaver(mb)).invoke({ log: ["again"] }, config);
    assert.deepEqual(second.log, ["hi", "seen 1", "again", "seen 3"]);
    const other = await build(new MemorybankSaver(mb)).invoke(
      { log: ["x"] },
      { configurable: { thread_id: "g2" } },
    );
    assert.deepEqual(other.log, ["x", "seen 1"]);
    const saver = new MemorybankSaver(mb);
    const history = [];
    for await (const t of saver.list(config)) history.push(t.checkpoint.id);
    assert.ok(history.length >= 4);
    await saver.deleteThread("g1");
    assert.equal(await saver.getTuple(config), undefined);
  });

  test("a channel unchanged over steps is stored once and read back at every checkpoint", async () => {
    const State = Annotation.Root({
      profile: Annotation(),
      log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const graph = new StateGraph(State)
      .addNode("one", () => ({ log: ["one"] }))
      .addNode("two", () => ({ log: ["two"] }))
      .addEdge(START, "one")
      .addEdge("one", "two")
      .addEdge("two", END)
      .compile({ checkpointer: new MemorybankSaver(mb) });
    const config = { configurable: { thread_id: "g3" } };
    const profile = { name: "alice", notes: "x".repeat(2000) };
    const out = await graph.invoke({ profile, log: [] }, config);
    assert.deepEqual(out, { profile, log: ["one", "two"] });
    const keys = (await mb.working("lg:g3").items().all()).map((i) => i.key);
    const checkpoints = keys.filter((k) => k.startsWith("cp|"));
    const profileBlobs = keys.filter((k) => k.startsWith("b|") && k.split("|")[2] === "profile");
    assert.ok(checkpoints.length >= 4, keys.join(" "));
    assert.equal(profileBlobs.length, 1, keys.join(" "));
    const saver = new MemorybankSaver(mb);
    const withProfile = [];
    for await (const t of saver.list(config)) {
      if (t.checkpoint.channel_versions.profile !== undefined) {
        withProfile.push(t.checkpoint.channel_values.profile);
      }
    }
    assert.ok(withProfile.length >= 3);
    for (const p of withProfile) assert.deepEqual(p, profile);
    const state = await graph.getState(config);
    assert.deepEqual(state.values, { profile, log: ["one", "two"] });
  });
});
