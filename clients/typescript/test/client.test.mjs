// The client against a live `memorybank serve`, on each store of $MEMORYBANK_TS_STORES.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MemoryBank, MemoryBankError } from "../dist/index.js";
import { python, STORES, serve } from "./harness.mjs";

async function rejectsWith(promise, code, status, field) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof MemoryBankError, `not a MemoryBankError: ${error}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.status, status);
    if (field instanceof RegExp) assert.match(error.field ?? "", field);
    else if (field !== undefined) assert.equal(error.field, field);
    assert.ok(error.requestId, "every error names its request");
    return true;
  });
}

for (const store of STORES) {
  describe(`client on ${store}`, () => {
    let server;
    let mb; // tenant "acme", no end user
    let other; // tenant "globex"
    before(async () => {
      server = await serve(store);
      mb = new MemoryBank({ baseUrl: server.baseUrl, apiKey: await server.key("acme"), agentId: "atlas" });
      other = new MemoryBank({ baseUrl: server.baseUrl, apiKey: await server.key("globex") });
    });
    after(async () => {
      await server?.stop();
    });

    test("events: the change feed after a cursor, by kind, for one user, long-polled", async () => {
      python(
        "import sys\nfrom memorybank import Memory\nm = Memory(sys.argv[1])\nm.events.enable()\nm.close()",
        [server.url],
      );
      const start = await mb.events.list();
      const thread = await mb.threads.create({ userId: "eve" });
      await mb.entries.add(thread.id, { role: "user", content: "private words" });
      const page = await mb.events.list({
        after: start.nextCursor,
        kinds: ["thread.created", "entry.added"],
      });
      assert.deepEqual(
        page.items.map((e) => [e.kind, e.thread_id]),
        [
          ["thread.created", thread.id],
          ["entry.added", thread.id],
        ],
      );
      assert.ok(!JSON.stringify(page).includes("private words"));
      const none = await mb.events.list({ after: page.nextCursor });
      assert.deepEqual(none, { items: [], nextCursor: page.nextCursor });
      const bob = await mb.withUser("bob").events.list({ after: start.nextCursor });
      assert.deepEqual(bob.items, []);
      const waiting = mb.events.list({ after: page.nextCursor, wait: 20 });
      await mb.entries.add(thread.id, { role: "assistant", content: "later" });
      assert.deepEqual(
        (await waiting).items.map((e) => e.kind),
        ["entry.added"],
      );
      await rejectsWith(mb.events.list({ kinds: ["nope"] }), "invalid_input", 422);
    });

    test("threads: create, get, list (paged), update, delete", async () => {
      const thread = await mb.threads.create({ title: "Support", metadata: { channel: "web" } });
      assert.ok(thread.id);
      assert.equal(thread.agent_id, "atlas");
      assert.equal((await mb.threads.get(thread.id)).title, "Support");
      const named = await mb.threads.create({ threadId: "t-named", userId: "alice" });
      assert.equal(named.id, "t-named");
      assert.equal(named.user_id, "alice");
      for (let i = 0; i < 4; i++) await mb.threads.create({ threadId: `t-page-${i}` });
      const pages = [];
      for await (const page of mb.threads.list({ limit: 2 }).pages()) pages.push(page.items.length);
      assert.ok(pages.length >= 3, `paged in twos: ${pages}`);
      const seen = [];
      for await (const t of mb.threads.list({ limit: 2 })) seen.push(t.id);
      assert.equal(new Set(seen).size, seen.length);
      assert.ok(seen.includes(thread.id) && seen.includes("t-page-3"));
      const onlyAlice = await mb.threads.list({ userId: "alice" }).all();
      assert.deepEqual(
        onlyAlice.map((t) => t.id),
        ["t-named"],
      );
      const changed = await mb.threads.update(thread.id, { title: "Billing", status: "archived" });
      assert.equal(changed.title, "Billing");
      assert.equal(changed.status, "archived");
      await mb.threads.delete(thread.id);
      await rejectsWith(mb.threads.get(thread.id), "not_found", 404);
    });

    test("entries and history: add (keyed), batch, list, get, count, delete, clear", async () => {
      const { id } = await mb.threads.create();
      const first = await mb.entries.add(id, { role: "user", content: "My name is Ada." });
      assert.ok(first.idempotency_key, "a key is made for every append");
      const again = await mb.entries.add(
        id,
        { role: "user", content: "My name is Ada." },
        { idempotencyKey: first.idempotency_key },
      );
      assert.equal(again.id, first.id, "the same key returns the stored entry");
      await rejectsWith(
        mb.entries.add(id, { role: "user", content: "other" }, { idempotencyKey: first.idempotency_key }),
        "conflict",
        409,
      );
      const batch = await mb.entries.addMany(id, [
        {
          role: "assistant",
          content: null,
          toolCalls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: "{}" } }],
        },
        { role: "tool", content: "42", toolCallId: "c1" },
        { role: "assistant", content: "Hello Ada, the answer is 42." },
      ]);
      assert.equal(batch.length, 3);
      assert.equal(await mb.entries.count(id), 4);
      const history = await mb.history(id, { last: 10 });
      assert.deepEqual(history, [
        { role: "user", content: "My name is Ada." },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: "{}" } }],
        },
        { role: "tool", content: "42", tool_call_id: "c1" },
        { role: "assistant", content: "Hello Ada, the answer is 42." },
      ]);
      assert.deepEqual(
        (await mb.history(id, { last: 1 })).map((m) => m.content),
        ["Hello Ada, the answer is 42."],
      );
      const all = await mb.entries.list(id, { limit: 3 }).all();
      assert.equal(all.length, 4);
      assert.equal((await mb.entries.get(id, first.id)).content, "My name is Ada.");
      await mb.entries.delete(id, batch[2].id);
      assert.equal(await mb.entries.count(id), 3);
      assert.equal(await mb.entries.clear(id), 3);
      assert.deepEqual(await mb.history(id, { last: 5 }), []);
    });

    test("branches: create, list, checkout, rewind, delete", async () => {
      const { id } = await mb.threads.create();
      const [a, b] = await mb.entries.addMany(id, [
        { role: "user", content: "one" },
        { role: "assistant", content: "two" },
        { role: "user", content: "three" },
      ]);
      const branch = await mb.branches.create(id, "alt", { fromEntry: a.id });
      assert.equal(branch.name, "alt");
      assert.deepEqual((await mb.branches.list(id).all()).map((x) => x.name).sort(), ["alt", "main"]);
      assert.equal((await mb.branches.checkout(id, "alt")).current_branch, "alt");
      assert.deepEqual(
        (await mb.history(id, { last: 10 })).map((m) => m.content),
        ["one"],
      );
      await mb.branches.checkout(id, "main");
      assert.equal(await mb.branches.rewind(id, b.id), 1);
      assert.deepEqual(
        (await mb.history(id, { last: 10 })).map((m) => m.content),
        ["one", "two"],
      );
      await mb.branches.delete(id, "alt");
      await rejectsWith(mb.branches.delete(id, "alt"), "not_found", 404);
    });

    test("search, buildContext, compact and restore", async () => {
      const { id } = await mb.threads.create({ userId: "carol" });
      await mb.entries.addMany(id, [
        { role: "user", content: "I keep bees on my balcony in Lisbon." },
        { role: "assistant", content: "Urban beekeeping, how lovely." },
        { role: "user", content: "What should I plant for them?" },
      ]);
      const hits = await mb.search("bees balcony", { mode: "keyword", threadId: id, k: 5 });
      assert.ok(hits.length >= 1);
      assert.equal(typeof hits[0].score, "number");
      assert.match(hits[0].entry.content, /bees/);
      await rejectsWith(mb.search("bees", { mode: "semantic" }), "invalid_input", 422, "mode");
      const context = await mb.buildContext(id, {
        maxTokens: 2000,
        userId: "carol",
        input: "plants for bees",
        systemPrompt: "Be brief.",
      });
      assert.equal(context.messages[0].role, "system");
      assert.equal(context.messages.at(-1).content, "What should I plant for them?");
      assert.equal(context.total_entries, 3);
      const compaction = await mb.compact(id, { threshold: 1, keepRecent: 1 });
      assert.equal(compaction.thread_id, id);
      assert.deepEqual((await mb.history(id, { last: 10 })).length, 1);
      // a sliding window drops entries for good: nothing to restore
      assert.equal(await mb.restore(id), 0);
    });

    test("consolidate, its runs and undo; feedback", async () => {
      await mb.facts.add("Bea likes green tea", { userId: "bea" });
      await mb.facts.add("bea likes green tea!", { userId: "bea" });
      const dry = await mb.consolidate({ userId: "bea", dryRun: true });
      assert.equal(dry.status, "dry_run");
      assert.equal(dry.merged, 1);
      const run = await mb.consolidate({ userId: "bea" });
      assert.equal(run.changes[0].reason, "duplicate");
      const left = await mb.facts.list({ userId: "bea" }).all();
      assert.equal(left.filter((f) => f.user_id === "bea").length, 1);
      assert.ok((await mb.consolidation.runs().all()).some((r) => r.run_id === run.run_id));
      assert.equal((await mb.consolidation.report(run.run_id)).changes.length, 1);
      assert.equal((await mb.consolidation.undo(run.run_id)).status, "undone");
      await rejectsWith(mb.consolidation.undo(run.run_id), "conflict", 409);
      const bea = left.find((f) => f.user_id === "bea");
      const profile = await mb.profile("bea");
      assert.equal(profile.user_id, "bea");
      assert.ok(Object.keys(profile.attributes).length > 0);
      const rated = await mb.feedback(bea.id, false, { reason: "outdated" });
      assert.equal(rated.confidence, 0.25);
      await rejectsWith(mb.feedback("no-such-fact", true), "not_found", 404);
    });

    test("facts, core facts, documents, summaries", async () => {
      const fact = await mb.facts.add("Ada prefers tea", { userId: "ada", category: "preference" });
      assert.equal(fact.agent_id, "atlas");
      assert.equal((await mb.facts.get(fact.id)).content, "Ada prefers tea");
      const updated = await mb.facts.update(fact.id, { content: "Ada prefers green tea", supersede: true });
      assert.equal(updated.content, "Ada prefers green tea");
      assert.ok((await mb.facts.history(fact.id)).length >= 2);
      assert.ok((await mb.facts.list({ userId: "ada" }).all()).some((f) => f.id === fact.id));
      assert.ok((await mb.facts.search("green tea", { userId: "ada" })).some((f) => f.id === fact.id));
      await mb.facts.delete(fact.id);
      await rejectsWith(mb.facts.get(fact.id), "not_found", 404);

      await mb.coreFacts.set("name", "Ada");
      await mb.coreFacts.set("name", "Ada L.");
      assert.equal(await mb.coreFacts.get("name"), "Ada L.");
      assert.deepEqual(await mb.coreFacts.all().all(), [{ key: "name", value: "Ada L." }]);
      assert.deepEqual(
        (await mb.coreFacts.history("name")).map((v) => v.value),
        ["Ada", "Ada L."],
      );
      await mb.coreFacts.delete("name");
      await rejectsWith(mb.coreFacts.get("name"), "not_found", 404);

      const doc = await mb.documents.add("The warranty lasts two years.", { metadata: { source: "faq" } });
      assert.equal((await mb.documents.get(doc.id)).metadata.source, "faq");
      assert.ok((await mb.documents.list().all()).some((d) => d.id === doc.id));
      await mb.documents.delete(doc.id);
      await rejectsWith(mb.documents.get(doc.id), "not_found", 404);

      const summary = await mb.summaries.add("Ada asked about tea.");
      assert.equal(summary.agent_id, "atlas");
      assert.deepEqual(
        (await mb.summaries.list().all()).map((s) => s.id),
        [summary.id],
      );
    });

    test("working memory, snapshots, sessions", async () => {
      const run = mb.working("run-1");
      await run.set("step", 3);
      await run.set("plan", { todo: ["a", "b"] });
      assert.equal(await run.get("step"), 3);
      assert.deepEqual(await run.get("plan"), { todo: ["a", "b"] });
      assert.equal(await run.get("missing"), undefined);
      assert.deepEqual((await run.items().all()).map((i) => i.key).sort(), ["plan", "step"]);
      assert.equal(await run.delete("step"), true);
      assert.equal(await run.delete("step"), false);
      await run.clear();
      assert.deepEqual(await run.items().all(), []);

      await mb.snapshots.save("run-1", { cursor: 7 });
      assert.deepEqual(await mb.snapshots.load("run-1"), { cursor: 7 });
      await mb.snapshots.delete("run-1");
      assert.equal(await mb.snapshots.load("run-1"), undefined);

      const session = await mb.sessions.open({ channelType: "slack", channelId: "C1", userId: "dan" });
      assert.equal(session.agent_id, "atlas");
      const same = await mb.sessions.open({ channelType: "slack", channelId: "C1", userId: "dan" });
      assert.equal(same.id, session.id);
      assert.equal((await mb.sessions.get(session.id)).channel_id, "C1");
      assert.equal((await mb.sessions.update(session.id, { status: "paused" })).status, "paused");
      assert.ok((await mb.sessions.list().all()).some((s) => s.id === session.id));
      await mb.sessions.delete(session.id);
      await rejectsWith(mb.sessions.get(session.id), "not_found", 404);
    });

    test("graph: entities, relations, traversal, path, stats, clear", async () => {
      const ada = await mb.graph.addEntity({ name: "Ada", type: "person", observations: ["likes tea"] });
      const acme = await mb.graph.addEntity({ name: "Acme", type: "company" });
      const rel = await mb.graph.addRelation({ sourceId: ada.id, type: "works_at", targetId: acme.id });
      assert.equal((await mb.graph.getEntity(ada.id)).name, "Ada");
      assert.deepEqual((await mb.graph.addObservations(ada.id, ["codes"])).observations, [
        "likes tea",
        "codes",
      ]);
      assert.deepEqual((await mb.graph.deleteObservations(ada.id, ["codes"])).observations, ["likes tea"]);
      assert.equal((await mb.graph.updateEntity(ada.id, { type: "engineer" })).type, "engineer");
      assert.ok((await mb.graph.entities().all()).length === 2);
      assert.ok((await mb.graph.searchEntities("Ada")).some((e) => e.id === ada.id));
      assert.deepEqual(
        (await mb.graph.relations(ada.id).all()).map((r) => r.id),
        [rel.id],
      );
      assert.deepEqual(
        (await mb.graph.neighbors(ada.id).all()).map((e) => e.id),
        [acme.id],
      );
      assert.equal((await mb.graph.getRelation(rel.id)).type, "works_at");
      assert.equal((await mb.graph.updateRelation(rel.id, { weight: 0.5 })).weight, 0.5);
      const sub = await mb.graph.traverse({ startIds: [ada.id], maxDepth: 2 });
      assert.equal(sub.entities.length, 2);
      const path = await mb.graph.path(ada.id, acme.id);
      assert.equal(path.hops, 1);
      assert.equal((await mb.graph.stats()).entities, 2);
      assert.ok(Array.isArray(await mb.graph.infer()));
      assert.ok((await mb.graph.invalidateRelation(rel.id)).invalid_at);
      await mb.graph.deleteRelation(rel.id);
      const dup = await mb.graph.addEntity({ name: "Ada Lovelace", type: "engineer" });
      assert.equal((await mb.graph.merge(ada.id, { merge: dup.id })).id, ada.id);
      await mb.graph.deleteEntity(acme.id);
      assert.ok((await mb.graph.clear()) >= 1);
      assert.equal((await mb.graph.stats()).entities, 0);
    });

    test("cortex routes: save, load, clear", async () => {
      await mb.cortex.save("helper", [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
      ]);
      assert.deepEqual(await mb.cortex.load("helper", { limit: 10 }), [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
      ]);
      await mb.cortex.clear("helper");
      assert.deepEqual(await mb.cortex.load("helper"), []);
    });

    test("search takes the query and options, or one request object", async () => {
      const { id } = await mb.threads.create();
      await mb.entries.add(id, { role: "user", content: "the quokka smiles on the ferry" });
      const two = await mb.search("quokka ferry", { mode: "keyword", threadId: id });
      const one = await mb.search({ query: "quokka ferry", mode: "keyword", threadId: id });
      assert.equal(two.length, 1);
      assert.deepEqual(
        one.map((h) => h.entry?.id),
        two.map((h) => h.entry?.id),
      );
    });

    test("non-ASCII user ids reach the server exactly, never normalised", async () => {
      const zoe = mb.withUser("zo\u00eb"); // sent percent-encoded: fetch sends no UTF-8 headers
      const thread = await zoe.threads.create({ title: "zoe's" });
      assert.equal(thread.user_id, "zo\u00eb");
      await zoe.facts.add("zoe likes quinces");
      assert.deepEqual(
        (await zoe.threads.list().all()).map((t) => t.id),
        [thread.id],
      );
      for (const lookalike of ["zoe\u0308", "\uff5a\uff4f\u00eb", " zo\u00eb"]) {
        const other = mb.withUser(lookalike);
        assert.deepEqual(await other.threads.list().all(), [], lookalike);
        assert.deepEqual(await other.facts.list().all(), [], lookalike);
        await rejectsWith(other.threads.get(thread.id), "thread_forbidden", 403);
      }
      await rejectsWith(mb.withUser("zo\u00a0e").threads.list().all(), "invalid_input", 422, "X-User-Id");
      await mb.forgetUser("zo\u00eb");
    });

    test("withUser confines calls to a user; forgetUser erases them", async () => {
      const erin = mb.withUser("erin");
      const frank = mb.withUser("frank");
      const mine = await erin.threads.create({ title: "erin's" });
      assert.equal(mine.user_id, "erin");
      await erin.entries.add(mine.id, { role: "user", content: "secret of erin" });
      await rejectsWith(frank.history(mine.id, { last: 5 }), "thread_forbidden", 403);
      assert.deepEqual(await frank.threads.list().all(), []);
      assert.deepEqual(
        (await erin.threads.list().all()).map((t) => t.id),
        [mine.id],
      );
      assert.ok((await erin.forgetUser("erin")) >= 1);
      await rejectsWith(mb.threads.get(mine.id), "not_found", 404);
    });

    test("another tenant's key sees nothing", async () => {
      const { id } = await mb.threads.create({ title: "acme only" });
      await mb.entries.add(id, { role: "user", content: "acme confidential plans" });
      const fact = await mb.facts.add("acme secret fact");
      await mb.working("shared-run").set("k", "acme");
      await rejectsWith(other.threads.get(id), "not_found", 404);
      await rejectsWith(other.history(id, { last: 5 }), "not_found", 404);
      await rejectsWith(other.entries.add(id, { role: "user", content: "x" }), "not_found", 404);
      await rejectsWith(other.facts.get(fact.id), "not_found", 404);
      assert.deepEqual(await other.threads.list().all(), []);
      assert.deepEqual(await other.facts.list().all(), []);
      assert.deepEqual(await other.search("acme confidential", { mode: "keyword" }), []);
      assert.equal(await other.working("shared-run").get("k"), undefined);
      assert.equal(await mb.entries.count(id), 1, "nothing was written by the other tenant");
    });

    test("bad input and bad keys reject with typed errors and write nothing", async () => {
      const { id } = await mb.threads.create();
      await rejectsWith(mb.entries.add(id, { content: "no role" }), "invalid_input", 422, /(^|\.)role$/);
      await rejectsWith(mb.history(id, { last: -1 }), "invalid_input", 422, "query.last");
      await rejectsWith(
        mb.threads.list({ cursor: "not-a-cursor" }).page("not-a-cursor"),
        "invalid_input",
        422,
        "cursor",
      );
      assert.equal(await mb.entries.count(id), 0);
      const stranger = new MemoryBank({ baseUrl: server.baseUrl, apiKey: "mb_nope_nope" });
      await rejectsWith(stranger.threads.list().page(), "unauthorized", 401);
      await rejectsWith(
        mb.entries.add(id, { role: "user", content: "x".repeat(1_100_000) }),
        "payload_too_large",
        413,
      );
      assert.equal(await mb.entries.count(id), 0);
    });

    test("an aborted signal rejects with its reason", async () => {
      const controller = new AbortController();
      controller.abort(new Error("stop"));
      await assert.rejects(mb.threads.get("x", { signal: controller.signal }), /stop/);
      await assert.rejects(mb.threads.list({ signal: controller.signal }).page(), /stop/);
    });
  });
}
