/**
 * Checking a memorybank webhook delivery: `verifyWebhook(secret, header, body)`.
 *
 * A delivery is a `POST` whose `Memorybank-Signature` header is `t=<unix seconds>,v1=<hex>`:
 * `<hex>` is HMAC-SHA256, keyed with the endpoint's secret, over `"<t>." + body` (the raw
 * body as received). `Memorybank-Event-Id` is the event's id, the same on every retry:
 * deduplicate on it. Uses Web Crypto (`globalThis.crypto.subtle`): Node 20+, Deno,
 * browsers, edge runtimes.
 */

/** The header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const SIGNATURE_HEADER = "Memorybank-Signature";
/** The header carrying the event's id (stable across retries). */
export const EVENT_ID_HEADER = "Memorybank-Event-Id";
/** Seconds a signature's timestamp may differ from the clock by default. */
export const DEFAULT_TOLERANCE = 300;

/** Why a delivery was refused. */
export type WebhookSignatureReason = "malformed" | "mismatch" | "stale";

/** A delivery whose signature is missing, malformed, wrong (`mismatch`) or too old (`stale`). */
export class WebhookSignatureError extends Error {
  readonly reason: WebhookSignatureReason;

  constructor(message: string, reason: WebhookSignatureReason) {
    super(message);
    this.name = "WebhookSignatureError";
    this.reason = reason;
  }
}

export interface VerifyWebhookOptions {
  /** Seconds the timestamp may differ from `now` (default 300). */
  tolerance?: number;
  /** The current time in Unix seconds (default: the clock). */
  now?: number;
}

const encoder = new TextEncoder();

/** The bytes of `value`, in a buffer of their own (what Web Crypto's types ask for). */
function bytesOf(value: string | Uint8Array): Uint8Array<ArrayBuffer> {
  if (typeof value === "string") return encoder.encode(value);
  const copy = new Uint8Array(value.length);
  copy.set(value);
  return copy;
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Compares two strings in time that depends on their length only. */
function equalTimingSafe(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The hex HMAC-SHA256 of `"<timestamp>." + body` under `secret`. */
export async function signWebhook(
  secret: string | Uint8Array,
  timestamp: number,
  body: string | Uint8Array,
): Promise<string> {
  const key = await globalThis.crypto.subtle.importKey(
    "raw",
    bytesOf(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const prefix = encoder.encode(`${Math.trunc(timestamp)}.`);
  const raw = bytesOf(body);
  const message = new Uint8Array(prefix.length + raw.length);
  message.set(prefix, 0);
  message.set(raw, prefix.length);
  return hex(await globalThis.crypto.subtle.sign("HMAC", key, message));
}

/**
 * Check a delivery: `header` is its `Memorybank-Signature`, `body` the raw request body
 * (verify before parsing it). Resolves to the signature's timestamp; rejects with
 * `WebhookSignatureError` when the header is missing or malformed, when no `v1=` value
 * matches, or when the timestamp is more than `tolerance` seconds from `now`.
 */
export async function verifyWebhook(
  secret: string | Uint8Array,
  header: string | null | undefined,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): Promise<number> {
  if (!header) throw new WebhookSignatureError(`no ${SIGNATURE_HEADER} header`, "malformed");
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    const name = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (name === "t") {
      if (!/^-?\d+$/.test(value)) {
        throw new WebhookSignatureError(
          `bad timestamp ${JSON.stringify(value)} in the signature`,
          "malformed",
        );
      }
      timestamp = Number(value);
    } else if (name === "v1") {
      candidates.push(value);
    }
  }
  if (timestamp === undefined || candidates.length === 0) {
    throw new WebhookSignatureError("the signature needs t= and v1=", "malformed");
  }
  const expected = await signWebhook(secret, timestamp, body);
  let matched = false;
  for (const candidate of candidates) matched = equalTimingSafe(candidate, expected) || matched;
  if (!matched) {
    throw new WebhookSignatureError("the signature does not match the body and secret", "mismatch");
  }
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE;
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - timestamp) > tolerance) {
    const off = Math.round(Math.abs(now - timestamp));
    throw new WebhookSignatureError(
      `the signature's timestamp is ${off} s from now (tolerance ${tolerance} s)`,
      "stale",
    );
  }
  return timestamp;
}
