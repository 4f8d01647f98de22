// The built package: both module formats load, and the core imports nothing Node-only.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const require = createRequire(import.meta.url);
const dist = new URL("../dist/", import.meta.url);

test("ESM and CJS entries export the same client", async () => {
  const esm = await import("../dist/index.js");
  const cjs = require("../dist/index.cjs");
  for (const name of [
    "MemoryBank",
    "MemoryBankError",
    "MemorybankSession",
    "MemorybankSaver",
    "loadChat",
    "saveChat",
  ]) {
    assert.equal(typeof esm[name], "function", `ESM ${name}`);
    assert.equal(typeof cjs[name], "function", `CJS ${name}`);
  }
  const core = await import("../dist/core.js");
  assert.equal(typeof core.MemoryBank, "function");
  assert.equal(core.MemorybankSaver, undefined, "the core carries no framework adapter");
});

test("the core's bundle imports nothing but openapi-fetch (no node: modules, no frameworks)", () => {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(new URL(file, dist), "utf8");
    for (const [, spec] of text.matchAll(/(?:from|import)\s*["']([^"']+)["']/g)) {
      if (spec.startsWith("./")) visit(spec.slice(2));
      else assert.equal(spec, "openapi-fetch", `${file} imports ${spec}`);
    }
  };
  visit("core.js");
  assert.ok(seen.size >= 1);
});

test("the AI SDK helper loads nothing of `ai` at run time (it needs its types only)", () => {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(new URL(file, dist), "utf8");
    for (const [, spec] of text.matchAll(/(?:from|import)\s*["']([^"']+)["']/g)) {
      if (spec.startsWith("./")) visit(spec.slice(2));
      else assert.equal(spec, "openapi-fetch", `${file} imports ${spec}`);
    }
  };
  visit("ai-sdk.js");
  assert.ok(
    readFileSync(new URL("ai-sdk.d.ts", dist), "utf8").includes('from "ai"'),
    "its types are the SDK's",
  );
});

test("the declarations ship for both formats", () => {
  for (const f of ["index.d.ts", "index.d.cts", "core.d.ts", "core.d.cts"]) {
    assert.ok(readFileSync(new URL(f, dist), "utf8").length > 0, f);
  }
});
