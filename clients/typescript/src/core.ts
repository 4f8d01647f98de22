/** The client alone (no framework imports): `import { MemoryBank } from "@memorybank/client/core"`. */
export * from "./client.js";
export { MemoryBankError, type MemoryBankErrorCode } from "./errors.js";
export { Paged, type PageShape } from "./paging.js";
export type { RequestOptions, TransportOptions } from "./transport.js";
export {
  DEFAULT_TOLERANCE,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  signWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  WebhookSignatureError,
  type WebhookSignatureReason,
} from "./webhooks.js";
