// MemorybankSession under the OpenAI Agents SDK's own run(), with a scripted model (the
// SDK's Model interface), against a live `memorybank serve`; and items shared with the
// Python MemorybankSession on the same store.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Agent, run, setTracingDisabled, tool, Usage } from "@openai/agents";
import { z } from "zod";
import { MemoryBank, MemorybankSession } from "../dist/index.js";
import { python, serve } from "./harness.mjs";

setTracingDisabled(true);

/** A model that answers from a script: each call gets the next reply; `inputs` records what it saw. */
class ScriptedModel {
  constructor(replies) {
    this.replies = replies;
    this.inputs = [];
  }
  async getResponse(request) {
    this.inputs.push(structuredClone(request.input));
    const output = this.replies.shift();
    assert.ok(output, "the script ran out");
    return { usage: new Usage(), output, responseId: `resp_${this.inputs.length}` };
  }
  // biome-ignore lint/correctness/useYield: the tests never stream
  async *getStreamedResponse() {
    throw new Error("not streamed in these tests");
  }
}

const say = (id, text) => ({
  type: "message",
  id,
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});

const PY_SESSION = `
import asyncio, json, sys
from memorybank import AsyncMemory
from memorybank.integrations.openai_agents import MemorybankSession

async def main(url, op, payload):
    memory = AsyncMemory(url)
    try:
        session = MemorybankSession(sys.argv[4], memory.tenant("acme"), user_id="alice")
        if op == "add":
            await session.add_items(json.loads(payload))
        print(json.dumps(await session.get_items()))
    finally:
        await memory.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
`;

describe("MemorybankSession (OpenAI Agents JS)", () => {
  let server;
  let mb;
  before(async () => {
    server = await serve("sqlite");
    mb = new MemoryBank({ baseUrl: server.baseUrl, apiKey: await server.key("acme") });
  });
  after(async () => {
    await server?.stop();
  });

  test("run() over three turns, with a tool call, keeps the whole conversation", async () => {
    const model = new ScriptedModel([
      [say("msg_1", "Hello Ada!")],
      [
        {
          type: "function_call",
          id: "fc_1",
          callId: "call_1",
          name: "multiply",
          arguments: '{"a":6,"b":7}',
          status: "completed",
        },
      ],
      [say("msg_2", "6 x 7 = 42.")],
      [say("msg_3", "You're welcome, Ada.")],
    ]);
    const multiply = tool({
      name: "multiply",
      description: "Multiply two numbers",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => String(a * b),
    });
    const agent = new Agent({ name: "atlas", instructions: "Be brief.", model, tools: [multiply] });
    const session = new MemorybankSession("agents-js-1", mb, { userId: "ada", agentId: "atlas" });
    const counts = [];
    let before = 0;
    for (const input of ["Hi, I am Ada.", "What is 6 x 7?", "Thanks!"]) {
      const result = await run(agent, input, { session });
      const items = await session.getItems();
      counts.push(items.length - before);
      before = items.length;
      assert.equal(typeof result.finalOutput, "string");
    }
    // per turn: user + reply; user + call + result + reply; user + reply
    assert.deepEqual(counts, [2, 4, 2]);
    console.log(`# SDK run transcript: items per turn ${JSON.stringify(counts)}`);
    const last = model.inputs.at(-1);
    assert.equal(last.length, 7, "the last model call saw the whole stored conversation and the new input");
    const stored = await session.getItems();
    assert.deepEqual(
      stored.map((i) => i.type ?? i.role),
      [
        "message",
        "message",
        "message",
        "function_call",
        "function_call_result",
        "message",
        "message",
        "message",
      ],
    );
    const result = stored[4];
    assert.equal(result.callId, "call_1");
    assert.equal(result.name, "multiply");
    assert.deepEqual(result.output, { type: "text", text: "42" });
    // the thread is an ordinary one: history and search see it
    const history = await mb.withUser("ada").history("agents-js-1", { last: 20 });
    assert.equal(history[3].type, "function_call");
    assert.equal(history[3].call_id, "call_1");
    assert.equal(history[4].type, "function_call_output");
    assert.equal(history[4].output, "42");
    // another user cannot read or write it
    const eve = new MemorybankSession("agents-js-1", mb, { userId: "eve" });
    await assert.rejects(eve.getItems(), (e) => e.code === "thread_forbidden");
  });

  test("items round-trip exactly; limit, popItem, clearSession", async () => {
    const session = new MemorybankSession("agents-js-2", mb, { userId: "ada" });
    const items = [
      { type: "message", role: "user", content: "Look at this" },
      {
        role: "user",
        content: [
          { type: "input_text", text: "two parts" },
          { type: "input_text", text: "here" },
        ],
      },
      { type: "message", role: "system", content: "system note" },
      say("msg_9", "Sure."),
      {
        type: "function_call",
        id: "fc_9",
        callId: "c9",
        name: "lookup",
        arguments: "{}",
        status: "completed",
      },
      {
        type: "function_call_result",
        callId: "c9",
        name: "lookup",
        status: "completed",
        output: { type: "text", text: "found" },
      },
      { type: "reasoning", id: "rs_1", content: [{ type: "input_text", text: "thinking" }] },
    ];
    await session.addItems(items);
    assert.deepEqual(await session.getItems(), items);
    assert.deepEqual(await session.getItems(3), items.slice(-3));
    // a window never starts with a tool output whose call it cut off (as in Python)
    assert.deepEqual(await session.getItems(2), items.slice(-1));
    assert.deepEqual(await session.getItems(0), []);
    assert.deepEqual(await session.popItem(), items.at(-1));
    assert.deepEqual(await session.popItem(), items.at(-2), "a popped result keeps its call's name");
    assert.deepEqual(await session.getItems(), items.slice(0, -2));
    await session.clearSession();
    assert.deepEqual(await session.getItems(), []);
    assert.equal(await session.popItem(), undefined);
    assert.equal(await session.getSessionId(), "agents-js-2");
  });

  test("a conversation started in Python continues in TypeScript, and back", async () => {
    const fromPython = [
      { role: "user", content: "Hi from Python" },
      {
        id: "msg_py",
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Hello!", annotations: [], logprobs: [] }],
      },
      {
        type: "function_call",
        call_id: "py1",
        name: "weather",
        arguments: '{"city":"Lisbon"}',
        id: "fc_py",
        status: "completed",
      },
      { type: "function_call_output", call_id: "py1", output: "sunny" },
    ];
    const pyAdd = JSON.parse(python(PY_SESSION, [server.url, "add", JSON.stringify(fromPython), "shared-1"]));
    assert.deepEqual(pyAdd, fromPython, "Python stores its items exactly");

    const session = new MemorybankSession("shared-1", mb, { userId: "alice" });
    const seen = await session.getItems();
    assert.deepEqual(seen[0], { role: "user", content: "Hi from Python" });
    assert.deepEqual(seen[1].content, [
      { type: "output_text", text: "Hello!", providerData: { annotations: [], logprobs: [] } },
    ]);
    assert.deepEqual(seen[2], {
      type: "function_call",
      callId: "py1",
      name: "weather",
      arguments: '{"city":"Lisbon"}',
      id: "fc_py",
      status: "completed",
    });
    assert.deepEqual(seen[3], {
      type: "function_call_result",
      callId: "py1",
      name: "weather",
      status: "completed",
      output: { type: "text", text: "sunny" },
    });
    await session.addItems([
      { type: "message", role: "user", content: "And tomorrow?" },
      say("msg_ts", "Rain."),
      {
        type: "function_call_result",
        callId: "py1",
        name: "weather",
        status: "completed",
        output: { type: "text", text: "rain" },
      },
    ]);
    const back = JSON.parse(python(PY_SESSION, [server.url, "get", "", "shared-1"]));
    assert.deepEqual(back.slice(0, 4), fromPython, "TypeScript left Python's items as they were");
    assert.deepEqual(back.slice(4), [
      { type: "message", role: "user", content: "And tomorrow?" },
      {
        type: "message",
        id: "msg_ts",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Rain." }],
      },
      { type: "function_call_output", call_id: "py1", status: "completed", output: "rain" },
    ]);
  });
});
