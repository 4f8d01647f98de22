/** The error every failed call rejects with: the server's `{code, message, field?, request_id}`. */

/** The library's stable error codes (the server may send others: `code` is then that string). */
export type MemoryBankErrorCode =
  | "not_found"
  | "thread_forbidden"
  /** A `user_id`/`agent_id` other than the caller's `X-User-Id` (403). */
  | "out_of_scope"
  | "forbidden"
  | "conflict"
  /** A change-feed cursor older than the events kept (410): read afresh, follow from none. */
  | "cursor_expired"
  | "invalid_input"
  | "unauthorized"
  | "store_unavailable"
  | "store_closed"
  | "payload_too_large"
  | "store_error"
  | "internal_error"
  /** No answer in time (the client's timeout; `status` 0). */
  | "timeout"
  /** The server could not be reached (`status` 0). */
  | "network_error";

/**
 * A failed call: `code` is the server's stable code (a discriminant: switch on it),
 * `status` the HTTP status (0 when no response came), `field` the bad input's
 * location (`invalid_input`), `requestId` the server's `X-Request-ID`.
 */
export class MemoryBankError extends Error {
  readonly code: MemoryBankErrorCode | (string & {});
  readonly status: number;
  readonly field: string | undefined;
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait (`Retry-After` of a 503). */
  readonly retryAfter: number | undefined;

  constructor(init: {
    code: string;
    message: string;
    status: number;
    field?: string | null | undefined;
    requestId?: string | null | undefined;
    retryAfter?: number | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "MemoryBankError";
    this.code = init.code;
    this.status = init.status;
    this.field = init.field ?? undefined;
    this.requestId = init.requestId ?? undefined;
    this.retryAfter = init.retryAfter;
  }
}

/** `Retry-After` in seconds (a number or an HTTP date), `undefined` when absent or bad. */
export function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(header);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}
