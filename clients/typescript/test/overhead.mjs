// Not a test: p50 of the client against plain fetch for history and append, one process,
// loopback, SQLite; the two interleaved. `MEMORYBANK_PYTHON=... node test/overhead.mjs`
import { MemoryBank } from "../dist/index.js";
import { serve } from "./harness.mjs";

const N = 300;
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/**
 * The two calls interleaved (their order swapped each round), so the load of a shared
 * machine falls on both alike: the p50 of each, and the p50 of the paired differences.
 */
async function pair(raw, client) {
  const r = [];
  const c = [];
  const d = [];
  for (let i = 0; i < N; i++) {
    const once = async (fn) => {
      const t = performance.now();
      await fn(i);
      return performance.now() - t;
    };
    let a;
    let b;
    if (i % 2 === 0) {
      a = await once(raw);
      b = await once(client);
    } else {
      b = await once(client);
      a = await once(raw);
    }
    r.push(a);
    c.push(b);
    d.push(b - a);
  }
  return [p50(r), p50(c), p50(d)];
}

const server = await serve("sqlite");
try {
  const apiKey = await server.key("bench");
  const mb = new MemoryBank({ baseUrl: server.baseUrl, apiKey });
  const { id } = await mb.threads.create();
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  for (let i = 0; i < 20; i++) await mb.entries.add(id, { role: "user", content: `warm ${i}` });
  const [rawAppend, clientAppend, dAppend] = await pair(
    async (i) => {
      const r = await fetch(`${server.baseUrl}/v1/threads/${id}/entries`, {
        method: "POST",
        headers: { ...headers, "idempotency-key": crypto.randomUUID() },
        body: JSON.stringify({ role: "user", content: `raw ${i}` }),
      });
      await r.json();
    },
    (i) => mb.entries.add(id, { role: "user", content: `client ${i}` }),
  );
  const [rawHistory, clientHistory, dHistory] = await pair(
    async () => {
      const r = await fetch(`${server.baseUrl}/v1/threads/${id}/history?last=20`, { headers });
      await r.json();
    },
    () => mb.history(id, { last: 20 }),
  );
  const f = (x) => x.toFixed(2);
  console.log(
    `append  p50: fetch ${f(rawAppend)} ms, client ${f(clientAppend)} ms (paired difference p50 ${f(dAppend)})`,
  );
  console.log(
    `history p50: fetch ${f(rawHistory)} ms, client ${f(clientHistory)} ms (paired difference p50 ${f(dHistory)})`,
  );
} finally {
  await server.stop();
}
