// verifyWebhook against signatures made by the Python service's own signer
// (memorybank.webhooks.signature_header) and by node:crypto: good, tampered, wrong
// secret, stale, malformed. The clock is passed in (`now`), never waited on.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, test } from "node:test";
import {
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  signWebhook,
  verifyWebhook,
  WebhookSignatureError,
} from "../dist/index.js";
import { python } from "./harness.mjs";

const SECRET = "whsec_test-secret-for-the-node-suite";
const BODY = JSON.stringify({ id: "ev_1", kind: "entry.added", thread_id: "t1", note: "zoë ✓" });
const T = 1_780_000_000;

/** The header the Python service sends for BODY at T. */
function pythonHeader(secret = SECRET, body = BODY, timestamp = T) {
  const code =
    "import sys; from memorybank.webhooks import signature_header;" +
    "print(signature_header(sys.argv[1], sys.argv[2].encode(), timestamp=int(sys.argv[3])))";
  return python(code, [secret, body, String(timestamp)]).trim();
}

async function refused(promise, reason) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof WebhookSignatureError, String(error));
    assert.equal(error.reason, reason);
    return true;
  });
}

describe("verifyWebhook", () => {
  test("the header names are the service's", () => {
    assert.equal(SIGNATURE_HEADER, "Memorybank-Signature");
    assert.equal(EVENT_ID_HEADER, "Memorybank-Event-Id");
  });

  test("accepts the Python service's signature, string or bytes body", async () => {
    const header = pythonHeader();
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.equal(await verifyWebhook(SECRET, header, BODY, { now: T + 10 }), T);
    assert.equal(await verifyWebhook(SECRET, header, new TextEncoder().encode(BODY), { now: T - 10 }), T);
  });

  test("signs exactly as HMAC-SHA256 over `t.body` (node:crypto)", async () => {
    const expected = createHmac("sha256", SECRET).update(`${T}.${BODY}`).digest("hex");
    assert.equal(await signWebhook(SECRET, T, BODY), expected);
    assert.equal(pythonHeader(), `t=${T},v1=${expected}`);
  });

  test("one matching v1 among several is enough", async () => {
    const good = await signWebhook(SECRET, T, BODY);
    const header = `t=${T},v1=${"0".repeat(64)},v1=${good}`;
    assert.equal(await verifyWebhook(SECRET, header, BODY, { now: T }), T);
  });

  test("refuses a tampered body, another secret, another timestamp", async () => {
    const header = pythonHeader();
    await refused(verifyWebhook(SECRET, header, `${BODY} `, { now: T }), "mismatch");
    await refused(verifyWebhook("whsec_another-secret-entirely", header, BODY, { now: T }), "mismatch");
    const moved = header.replace(`t=${T}`, `t=${T + 1}`);
    await refused(verifyWebhook(SECRET, moved, BODY, { now: T }), "mismatch");
  });

  test("refuses a stale signature (tolerance)", async () => {
    const header = pythonHeader();
    await refused(verifyWebhook(SECRET, header, BODY, { now: T + 301 }), "stale");
    await refused(verifyWebhook(SECRET, header, BODY, { now: T - 301 }), "stale");
    assert.equal(await verifyWebhook(SECRET, header, BODY, { now: T + 3600, tolerance: 7200 }), T);
  });

  test("refuses a missing or malformed header", async () => {
    await refused(verifyWebhook(SECRET, undefined, BODY, { now: T }), "malformed");
    await refused(verifyWebhook(SECRET, "", BODY, { now: T }), "malformed");
    await refused(verifyWebhook(SECRET, `t=${T}`, BODY, { now: T }), "malformed");
    await refused(verifyWebhook(SECRET, "v1=abc", BODY, { now: T }), "malformed");
    await refused(verifyWebhook(SECRET, "t=soon,v1=abc", BODY, { now: T }), "malformed");
  });
});
