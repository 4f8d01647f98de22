// The built package: both module formats load, and the core imports nothing Node-only.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const require = createRequire(import.meta.url);
const dist = new URL("../dist/", import.meta.url);

test("ESM and CJS entries export the same client", async () => {
  const esm = await import("../dist/index.js");
  const cjs = require("../dist/index.cjs");
  for (const name of ["MemoryBank", "MemoryBankError", "MemorybankSession", "MemorybankSaver"]) {
    assert.equal(typeof esm[name], "function", `ESM ${name}`);
    assert.equal(typeof cjs[name], "function", `CJS ${name}`);
  }
  const core = await import("../dist/core.js");
  assert.equal(typeof core.MemoryBank, "function");
  assert.equal(core.MemorybankSaver, undefined, "the core carries no framework adapter");
});

test("the core's bundle imports nothing but openapi-fetch (no node: modules, no frameworks)", () => {
  const files = readdirSync(dist).filter(
    (f) => f.endsWith(".js") && !f.startsWith("index") && !f.includes("langgraph") && !f.includes("openai"),
  );
  assert.ok(files.includes("core.js"));
  for (const file of files) {
    const text = readFileSync(new URL(file, dist), "utf8");
    const imports = [...text.matchAll(/(?:from|import)\s*["']([^"']+)["']/g)].map((m) => m[1]);
    for (const spec of imports) {
      assert.ok(spec === "openapi-fetch" || spec.startsWith("./"), `${file} imports ${spec}`);
    }
  }
});

test("the declarations ship for both formats", () => {
  for (const f of ["index.d.ts", "index.d.cts", "core.d.ts", "core.d.cts"]) {
    assert.ok(readFileSync(new URL(f, dist), "utf8").length > 0, f);
  }
});
