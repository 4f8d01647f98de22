// Retries, timeouts and idempotent appends, through a loopback proxy in front of a live
// `memorybank serve` that misbehaves on purpose (503s, cut connections, answers held
// back until the test releases them). No test depends on how fast anything runs: a held
// answer waits for the test's signal, never for a clock.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { MemoryBank, MemoryBankError } from "../dist/index.js";
import { serve } from "./harness.mjs";

/** A promise and the function that resolves it (Promise.withResolvers, Node 22+). */
function signal() {
  let resolve;
  const promise = new Promise((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A proxy to `target`; `plan(req)` says what to do with each request. */
function proxy(target) {
  const seen = [];
  let plan = () => "forward";
  let gate = signal();
  let arrival = signal();
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    seen.push({ method: req.method, url: req.url, key: req.headers["idempotency-key"] });
    const action = plan(req, seen.length);
    arrival.resolve();
    if (action === "hold") await gate.promise; // until the test calls release()
    if (action === "503") {
      res.writeHead(503, { "content-type": "application/json", "retry-after": "0", "x-request-id": "px" });
      res.end(JSON.stringify({ code: "store_unavailable", message: "down", request_id: "px" }));
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const answer = await fetch(`${target}${req.url}`, {
      method: req.method,
      headers,
      body: body.length ? body : undefined,
    });
    const text = Buffer.from(await answer.arrayBuffer());
    if (action === "cut") {
      req.socket.destroy(); // the server did the work; the client never hears of it
      return;
    }
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(text);
  });
  return new Promise((ok) =>
    server.listen(0, "127.0.0.1", () =>
      ok({
        url: `http://127.0.0.1:${server.address().port}`,
        seen,
        setPlan: (p) => {
          plan = p;
          seen.length = 0;
          gate.resolve(); // requests still held from an earlier test go on
          gate = signal();
          arrival = signal();
        },
        /** Resolves once the next request has reached the proxy. */
        arrived: () => arrival.promise,
        /** Let every held request (and those still to come) go on to the server. */
        release: () => gate.resolve(),
        close: () => new Promise((r) => server.close(r)),
      }),
    ),
  );
}

describe("transport", () => {
  let server;
  let px;
  let mb;
  let direct;
  before(async () => {
    server = await serve("sqlite");
    px = await proxy(server.baseUrl);
    const apiKey = await server.key("acme");
    mb = new MemoryBank({ baseUrl: px.url, apiKey, backoffMs: 1 });
    direct = new MemoryBank({ baseUrl: server.baseUrl, apiKey });
  });
  after(async () => {
    await px?.close();
    await server?.stop();
  });

  test("a read is retried on 503 Retry-After, then succeeds", async () => {
    const { id } = await direct.threads.create();
    px.setPlan((_req, n) => (n <= 2 ? "503" : "forward"));
    assert.equal((await mb.threads.get(id)).id, id);
    assert.equal(px.seen.length, 3);
  });

  test("retries stop after maxRetries: the 503 comes back as store_unavailable", async () => {
    px.setPlan(() => "503");
    const once = new MemoryBank({ baseUrl: px.url, apiKey: "k", maxRetries: 1, backoffMs: 1 });
    await assert.rejects(once.threads.list().page(), (e) => {
      assert.ok(e instanceof MemoryBankError);
      assert.equal(e.code, "store_unavailable");
      assert.equal(e.status, 503);
      assert.equal(e.retryAfter, 0);
      return true;
    });
    assert.equal(px.seen.length, 2);
  });

  test("a request without a key (create) is sent once, never retried", async () => {
    px.setPlan(() => "503");
    await assert.rejects(mb.threads.create(), (e) => e.code === "store_unavailable");
    assert.equal(px.seen.length, 1);
  });

  test("an append whose answer is lost is retried with its key and stored once", async () => {
    const { id } = await direct.threads.create();
    px.setPlan((_req, n) => (n === 1 ? "cut" : "forward"));
    const entry = await mb.entries.add(id, { role: "user", content: "only once" });
    assert.equal(px.seen.length, 2);
    assert.ok(px.seen[0].key && px.seen[0].key === px.seen[1].key, "both attempts carry the same key");
    assert.equal(entry.idempotency_key, px.seen[0].key);
    assert.equal(await direct.entries.count(id), 1);
    px.setPlan((_req, n) => (n === 1 ? "cut" : "forward"));
    await mb.entries.addMany(id, [
      { role: "assistant", content: "a" },
      { role: "user", content: "b" },
    ]);
    assert.equal(await direct.entries.count(id), 3);
  });

  test("an attempt that takes longer than timeoutMs fails with code timeout", async () => {
    px.setPlan(() => "hold"); // no answer until released: the 100 ms always run out first
    const hasty = new MemoryBank({ baseUrl: px.url, apiKey: "k", timeoutMs: 100, maxRetries: 0 });
    await assert.rejects(hasty.threads.list().page(), (e) => {
      assert.ok(e instanceof MemoryBankError);
      assert.equal(e.code, "timeout");
      assert.equal(e.status, 0);
      return true;
    });
    // a call's own timeoutMs wins over the client's: held past 100 ms, then answered
    px.setPlan(() => "hold");
    const patient = new MemoryBank({ baseUrl: px.url, apiKey: "k", timeoutMs: 100, maxRetries: 0 });
    const call = patient.threads.list({ timeoutMs: 0 }).page();
    await px.arrived();
    const outlived = new Promise((r) => setTimeout(r, 200)); // past the client's 100 ms
    await outlived;
    px.release();
    await assert.rejects(call, (e) => e.code === "unauthorized");
  });

  test("an abort during a call rejects with the signal's reason", async () => {
    px.setPlan(() => "hold");
    const controller = new AbortController();
    const call = mb.threads.list({ signal: controller.signal }).page();
    await px.arrived(); // the request is in flight, held by the proxy
    controller.abort(new Error("user left"));
    await assert.rejects(call, /user left/);
    px.release();
  });
});
