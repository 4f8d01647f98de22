// Not a test: p50 of the client against plain fetch for history and append, one process,
// loopback, SQLite. `MEMORYBANK_PYTHON=... node test/overhead.mjs`
import { MemoryBank } from "../dist/index.js";
import { serve } from "./harness.mjs";

const N = 300;
const p50 = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function time(fn) {
  const out = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return p50(out);
}

const server = await serve("sqlite");
try {
  const apiKey = await server.key("bench");
  const mb = new MemoryBank({ baseUrl: server.baseUrl, apiKey });
  const { id } = await mb.threads.create();
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  for (let i = 0; i < 20; i++) await mb.entries.add(id, { role: "user", content: `warm ${i}` });
  const rawAppend = await time(async (i) => {
    const r = await fetch(`${server.baseUrl}/v1/threads/${id}/entries`, {
      method: "POST",
      headers: { ...headers, "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({ role: "user", content: `raw ${i}` }),
    });
    await r.json();
  });
  const clientAppend = await time((i) => mb.entries.add(id, { role: "user", content: `client ${i}` }));
  const rawHistory = await time(async () => {
    const r = await fetch(`${server.baseUrl}/v1/threads/${id}/history?last=20`, { headers });
    await r.json();
  });
  const clientHistory = await time(() => mb.history(id, { last: 20 }));
  const f = (x) => x.toFixed(2);
  console.log(
    `append  p50: fetch ${f(rawAppend)} ms, client ${f(clientAppend)} ms (+${f(clientAppend - rawAppend)})`,
  );
  console.log(
    `history p50: fetch ${f(rawHistory)} ms, client ${f(clientHistory)} ms (+${f(clientHistory - rawHistory)})`,
  );
} finally {
  await server.stop();
}
