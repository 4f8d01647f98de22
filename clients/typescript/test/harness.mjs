// Starts a real `memorybank serve` (SQLite file or PostgreSQL with a fresh table prefix)
// on a free loopback port, with an admin key, and makes API keys of two tenants.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
/** The Python with memorybank's dependencies: $MEMORYBANK_PYTHON, else the repo's .venv. */
export const PYTHON = process.env.MEMORYBANK_PYTHON ?? join(REPO, ".venv/bin/python");
export const POSTGRES_URL =
  process.env.MEMORYBANK_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";
/** The stores the tests run on: $MEMORYBANK_TS_STORES (comma-separated), else both. */
export const STORES = (process.env.MEMORYBANK_TS_STORES ?? "sqlite,postgres").split(",").filter(Boolean);

export const pyEnv = () => ({
  ...process.env,
  PYTHONPATH: [join(REPO, "src"), REPO, process.env.PYTHONPATH ?? ""].join(":"),
});

export function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

/** Run Python code (with the repo on the path); its stdout. */
export function python(code, args = []) {
  const done = spawnSync(PYTHON, ["-c", code, ...args], { cwd: REPO, env: pyEnv(), encoding: "utf8" });
  if (done.status !== 0) throw new Error(`python failed: ${done.stderr}`);
  return done.stdout;
}

/**
 * A served store: `{ baseUrl, url, admin, key(tenant), stop() }`. `key` makes an API key
 * of `tenant` through the admin routes.
 */
export async function serve(store) {
  const tag = randomBytes(4).toString("hex");
  let url;
  let dir;
  let prefix;
  if (store === "sqlite") {
    dir = mkdtempSync(join(tmpdir(), "mbts-"));
    url = `sqlite:///${join(dir, "served.db")}`;
  } else if (store === "postgres") {
    prefix = `ts${tag}_`;
    url = `${POSTGRES_URL}?prefix=${prefix}`;
  } else {
    throw new Error(`unknown store ${store}`);
  }
  const port = await freePort();
  const admin = `adm-${tag}`;
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(
    PYTHON,
    ["-m", "memorybank", "serve", "--url", url, "--port", String(port), "--admin-key", admin],
    { cwd: REPO, env: { ...pyEnv(), MEMORYBANK_KEY_CACHE_SECONDS: "0" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`memorybank serve exited:\n${log}`);
    try {
      const res = await fetch(`${baseUrl}/readyz`);
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`memorybank serve did not come up:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const key = async (tenant) => {
    const res = await fetch(`${baseUrl}/v1/admin/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ tenant, label: "ts-tests" }),
    });
    if (res.status !== 201) throw new Error(`key for ${tenant}: ${res.status} ${await res.text()}`);
    return (await res.json()).secret;
  };
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (prefix) {
      python(
        "import sys\nfrom tests.stores.test_contract_postgres import drop_tables\ndrop_tables(sys.argv[1], sys.argv[2])",
        [POSTGRES_URL, prefix],
      );
    }
  };
  return { baseUrl, url, admin, key, stop, log: () => log };
}
