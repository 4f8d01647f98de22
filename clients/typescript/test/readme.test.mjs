// README.md's TypeScript blocks, run in order as one program against a live `memorybank
// serve` (SQLite): the first call, search (both call forms, facts) and the error example
// work as written. Only the server's address and the key are put in, and the `!` of
// `process.env.MEMORYBANK_API_KEY!` (TypeScript) is dropped.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { serve } from "./harness.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const README = readFileSync(resolve(HERE, "../README.md"), "utf8");
const DIST = pathToFileURL(resolve(HERE, "../dist/index.js")).href;

/** The README's ```ts blocks, in order. */
function blocks() {
  return [...README.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

let server;
before(async () => {
  server = await serve("sqlite");
});
after(async () => {
  await server?.stop();
});

test("the README covers install, the first call, search and errors", () => {
  for (const heading of ["## Install", "## The first call", "## Search", "## Errors"]) {
    assert.ok(README.includes(`\n${heading}\n`), heading);
  }
  assert.match(README, /not on the npm registry yet/);
  assert.match(README, /mb\.search\("[^"]+", \{/); // the query first: search(query, options)
  assert.equal(blocks().length, 3);
});

test("the README's TypeScript runs as written against a live server", async () => {
  const key = await server.key("readme");
  const source = blocks()
    .join("\n")
    .replaceAll('from "@memorybank/client"', `from ${JSON.stringify(DIST)}`)
    .replaceAll('"http://127.0.0.1:8080"', JSON.stringify(server.baseUrl))
    .replaceAll("process.env.MEMORYBANK_API_KEY!", JSON.stringify(key));
  const lines = [];
  const program = source.replace(/console\.log\(/g, "globalThis.__readmeLog(");
  const dir = mkdtempSync(join(tmpdir(), "mbreadme-"));
  const file = join(dir, "readme.mjs");
  writeFileSync(file, program);
  globalThis.__readmeLog = (...args) => lines.push(args.map(String).join(" "));
  try {
    await import(pathToFileURL(file).href);
  } finally {
    delete globalThis.__readmeLog;
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(lines[0], "user: I prefer green tea.,assistant: Noted: green tea.");
  const searched = lines.some((line) => line.startsWith("entry ")); // a search hit
  assert.ok(searched, lines.join("\n"));
  assert.equal(lines.at(-1), "create it first"); // the error example's not_found branch
});
