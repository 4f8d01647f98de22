// loadChat / saveChat under the Vercel AI SDK's own streamText and toUIMessageStream (the
// server side of useChat), with a scripted model (the SDK's MockLanguageModelV3), against a
// live `memorybank serve`.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { convertToModelMessages, stepCountIs, streamText, tool, validateUIMessages } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { CHAT_STATE_KEY, loadChat, MemoryBank, MemoryBankError, saveChat } from "../dist/index.js";
import { STORES, serve } from "./harness.mjs";

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish = (unified) => ({ type: "finish", finishReason: { unified, raw: unified }, usage });
const textReply = (id, text) => [
  { type: "stream-start", warnings: [] },
  { type: "text-start", id },
  { type: "text-delta", id, delta: text.slice(0, 4) },
  { type: "text-delta", id, delta: text.slice(4) },
  { type: "text-end", id },
  finish("stop"),
];
const toolReply = (callId, city) => [
  { type: "stream-start", warnings: [] },
  { type: "tool-call", toolCallId: callId, toolName: "weather", input: JSON.stringify({ city }) },
  finish("tool-calls"),
];

/** A model streaming each call's next scripted reply; `prompts` records what it was sent. */
function scripted(replies) {
  const prompts = [];
  const model = new MockLanguageModelV3({
    doStream: async (options) => {
      prompts.push(options.prompt);
      const chunks = replies.shift();
      assert.ok(chunks, "the script ran out");
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const c of chunks) controller.enqueue(c);
            controller.close();
          },
        }),
      };
    },
  });
  return { model, prompts };
}

const tools = {
  weather: tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, sky: "sunny" }),
  }),
};

let ids = 0;
const user = (text) => ({ id: `u${++ids}`, role: "user", parts: [{ type: "text", text }] });

/**
 * One POST /api/chat as the AI SDK's docs write it: the stored chat plus the new user
 * message to the model, the finished UIMessage list saved in onFinish. Returns that list.
 */
async function turn(mb, chatId, model, text, options) {
  const messages = [...(await loadChat(mb, chatId, options)), user(text)];
  const result = streamText({
    model,
    messages: await convertToModelMessages(messages),
    tools,
    stopWhen: stepCountIs(3),
  });
  let saving;
  let finished;
  const stream = result.toUIMessageStream({
    originalMessages: messages,
    generateMessageId: () => `a${++ids}`,
    onFinish: ({ messages: all }) => {
      finished = all;
      saving = saveChat(mb, chatId, all, options);
      return saving;
    },
  });
  for await (const _chunk of stream) {
    // the browser would render these
  }
  await saving;
  assert.ok(finished, "onFinish ran");
  return finished;
}

const json = (v) => JSON.parse(JSON.stringify(v));

for (const store of STORES) {
  describe(`loadChat / saveChat (Vercel AI SDK) on ${store}`, () => {
    let server;
    let mb;
    before(async () => {
      server = await serve(store);
      mb = new MemoryBank({ baseUrl: server.baseUrl, apiKey: await server.key("acme") });
    });
    after(async () => {
      await server?.stop();
    });

    test("streamText turns with a tool call round-trip exactly, and the thread reads as a conversation", async () => {
      const { model, prompts } = scripted([
        textReply("t1", "Hello, Alice."),
        toolReply("call-1", "Paris"),
        textReply("t2", "Sunny in Paris."),
        textReply("t3", "You asked about Paris."),
      ]);
      const alice = { userId: "alice" };
      assert.deepEqual(await loadChat(mb, "chat-1", alice), [], "a chat never saved is empty");
      const counts = [];
      for (const text of ["Hi, I am Alice.", "Weather in Paris?", "What did I ask?"]) {
        const finished = await turn(mb, "chat-1", model, text, alice);
        const loaded = await loadChat(mb, "chat-1", alice);
        assert.deepEqual(loaded, json(finished));
        counts.push(loaded.length);
      }
      assert.deepEqual(counts, [2, 4, 6]);
      // the third call saw the whole chat: the tool call and its result among it
      const third = prompts[3].map((m) => m.role);
      assert.deepEqual(third, ["user", "assistant", "user", "assistant", "tool", "assistant", "user"]);
      const loaded = await loadChat(mb, "chat-1", alice);
      await validateUIMessages({ messages: loaded, tools });
      const toolPart = loaded[3].parts.find((p) => p.type === "tool-weather");
      assert.equal(toolPart.state, "output-available");
      assert.deepEqual(toolPart.output, { city: "Paris", sky: "sunny" });
      // each message is one entry whose content is its text: history and search see it
      const history = await mb.withUser("alice").history("chat-1", { last: 10 });
      assert.equal(history.length, 6);
      assert.deepEqual(
        history.map((m) => m.role),
        ["user", "assistant", "user", "assistant", "user", "assistant"],
      );
      assert.equal(history[3].content, 'weather({"city":"Paris"})\nSunny in Paris.');
      const entries = await mb.withUser("alice").entries.list("chat-1").all();
      assert.ok(entries.every((e) => e.state?.[CHAT_STATE_KEY] !== undefined));
    });

    test("a save makes the chat hold exactly the list: regenerated, edited, cut short", async () => {
      const bob = { userId: "bob" };
      const chat = [
        user("one"),
        { id: "a-1", role: "assistant", parts: [{ type: "text", text: "first" }], metadata: { n: 1 } },
        user("two"),
        { id: "a-2", role: "assistant", parts: [{ type: "text", text: "second" }] },
      ];
      await saveChat(mb, "chat-2", chat, bob);
      const before = await mb.withUser("bob").entries.list("chat-2").all();
      const regenerated = [
        ...chat.slice(0, 3),
        { id: "a-3", role: "assistant", parts: [{ type: "text", text: "second, again" }] },
      ];
      await saveChat(mb, "chat-2", regenerated, bob);
      assert.deepEqual(await loadChat(mb, "chat-2", bob), regenerated);
      const after = await mb.withUser("bob").entries.list("chat-2").all();
      assert.equal(after.length, 4);
      assert.deepEqual(
        after.slice(0, 3).map((e) => e.id),
        before.slice(0, 3).map((e) => e.id),
        "the shared prefix is not rewritten",
      );
      assert.notEqual(after[3].id, before[3].id);
      // a message updated in place (same id, new parts) is rewritten from there
      const edited = structuredClone(regenerated);
      edited[1].parts[0].text = "first, edited";
      await saveChat(mb, "chat-2", edited, bob);
      assert.deepEqual(await loadChat(mb, "chat-2", bob), edited);
      await saveChat(mb, "chat-2", edited.slice(0, 1), bob);
      assert.deepEqual(await loadChat(mb, "chat-2", bob), edited.slice(0, 1));
      await saveChat(mb, "chat-2", [], bob);
      assert.deepEqual(await loadChat(mb, "chat-2", bob), []);
    });

    test("bad input writes nothing; plain entries read as text; another user is refused", async () => {
      const carol = { userId: "carol" };
      await saveChat(mb, "chat-3", [user("kept")], carol);
      await assert.rejects(
        saveChat(mb, "chat-3", [user("kept"), { role: "user", text: "no id" }], carol),
        TypeError,
      );
      await assert.rejects(saveChat(mb, "chat-3", "hello", carol), TypeError);
      assert.equal((await loadChat(mb, "chat-3", carol)).length, 1);
      // an entry written without the adapter (the Python library, a plain add)
      const entry = await mb.withUser("carol").entries.add("chat-3", { role: "assistant", content: "plain" });
      const loaded = await loadChat(mb, "chat-3", carol);
      assert.deepEqual(loaded[1], {
        id: entry.id,
        role: "assistant",
        parts: [{ type: "text", text: "plain" }],
      });
      await saveChat(mb, "chat-3", loaded, carol); // given back unchanged, it stays as it is
      const entries = await mb.withUser("carol").entries.list("chat-3").all();
      assert.deepEqual(
        entries.map((e) => e.id),
        [entries[0].id, entry.id],
      );
      await mb
        .withUser("carol")
        .entries.add("chat-3", { type: "function_call", call_id: "x", name: "f", arguments: "{}" });
      await assert.rejects(
        loadChat(mb, "chat-3", carol),
        (e) => e instanceof MemoryBankError && e.code === "invalid_input",
      );
      // another user: refused, nothing revealed, nothing written
      await assert.rejects(
        loadChat(mb, "chat-3", { userId: "mallory" }),
        (e) => e.code === "thread_forbidden",
      );
      await assert.rejects(
        saveChat(mb, "chat-3", [user("mine now")], { userId: "mallory" }),
        (e) => e.code === "thread_forbidden",
      );
      // another tenant sees no such chat
      const other = new MemoryBank({ baseUrl: server.baseUrl, apiKey: await server.key("globex") });
      assert.deepEqual(await loadChat(other, "chat-3", carol), []);
      assert.equal((await mb.withUser("carol").entries.list("chat-3").all()).length, 3);
    });
  });
}
