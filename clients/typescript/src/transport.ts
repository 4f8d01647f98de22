/**
 * The one `fetch` every call goes through: auth headers, a timeout per attempt, the
 * caller's `AbortSignal`, and retries of requests that are safe to repeat.
 *
 * Safe to repeat: reads (GET, HEAD) and requests carrying an `Idempotency-Key` (the
 * server returns the stored result of a repeated keyed append). They are retried on a
 * network error, a timeout, and on 502/503/504, waiting the server's `Retry-After`
 * when it sends one, else an exponential backoff with jitter. Anything else is sent once.
 */

import { MemoryBankError, retryAfterSeconds } from "./errors.js";

/** Options of one call. */
export interface RequestOptions {
  /** Abort the call (rejects with the signal's reason, as `fetch` does). */
  signal?: AbortSignal;
  /** Milliseconds each attempt may take (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/** How the client talks to the server. */
export interface TransportOptions {
  /** Milliseconds each attempt may take (default 30 000; 0: no timeout). */
  timeoutMs?: number;
  /** Retries of a safe request after its first attempt (default 3). */
  maxRetries?: number;
  /** First backoff in milliseconds (default 200; doubles per retry, capped at 5 s). */
  backoffMs?: number;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
}

const RETRY_STATUS = new Set([502, 503, 504]);
const MAX_BACKOFF_MS = 5_000;
/** A `Retry-After` longer than this is not waited for: the error is returned. */
const MAX_RETRY_AFTER_S = 30;

/** Sends requests with retries and timeouts (one per client, shared by its scoped copies). */
export class Transport {
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly backoffMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: TransportOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = options.maxRetries ?? 3;
    this.backoffMs = options.backoffMs ?? 200;
    const impl = options.fetch ?? globalThis.fetch;
    if (typeof impl !== "function") throw new TypeError("no fetch: pass options.fetch");
    this.fetchImpl = impl;
  }

  /** A `fetch` for one call with `options`, in the shape openapi-fetch takes. */
  fetcher(options: RequestOptions = {}): (request: Request) => Promise<Response> {
    return (request) => this.send(request, options);
  }

  /** Send `request`, retrying it when that is safe. */
  async send(request: Request, options: RequestOptions = {}): Promise<Response> {
    const method = request.method.toUpperCase();
    const safe = method === "GET" || method === "HEAD" || request.headers.has("idempotency-key");
    const body = request.body === null ? undefined : await request.arrayBuffer();
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const retries = safe ? this.maxRetries : 0;
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      const { signal, cancel, timedOut } = attemptSignal(options.signal, timeoutMs);
      let response: Response;
      try {
        response = await this.fetchImpl(
          new Request(request.url, { method, headers: request.headers, body, signal }),
        );
      } catch (error) {
        cancel();
        if (options.signal?.aborted) throw options.signal.reason;
        const failure = timedOut()
          ? new MemoryBankError({
              code: "timeout",
              message: `no answer from ${method} ${pathOf(request.url)} within ${timeoutMs} ms`,
              status: 0,
              cause: error,
            })
          : new MemoryBankError({
              code: "network_error",
              message: `${method} ${pathOf(request.url)} failed: ${String(error)}`,
              status: 0,
              cause: error,
            });
        if (attempt >= retries) throw failure;
        await sleep(this.backoff(attempt, undefined), options.signal);
        continue;
      }
      cancel();
      if (!RETRY_STATUS.has(response.status) || attempt >= retries) return response;
      const after = retryAfterSeconds(response.headers.get("retry-after"));
      if (after !== undefined && after > MAX_RETRY_AFTER_S) return response;
      await response.body?.cancel();
      await sleep(this.backoff(attempt, after), options.signal);
    }
  }

  private backoff(attempt: number, retryAfter: number | undefined): number {
    const exponential = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2 ** attempt);
    const jittered = exponential / 2 + Math.random() * (exponential / 2);
    return retryAfter === undefined ? jittered : Math.max(retryAfter * 1000, jittered);
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** The signal of one attempt: the caller's, or the attempt's timeout, whichever fires first. */
function attemptSignal(
  outer: AbortSignal | undefined,
  timeoutMs: number,
): { signal: AbortSignal; cancel: () => void; timedOut: () => boolean } {
  const controller = new AbortController();
  let fired = false;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          fired = true;
          controller.abort(new DOMException("timed out", "TimeoutError"));
        }, timeoutMs)
      : undefined;
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    cancel: () => {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    },
    timedOut: () => fired,
  };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
