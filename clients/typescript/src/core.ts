/** The client alone (no framework imports): `import { MemoryBank } from "@memorybank/client/core"`. */
export * from "./client.js";
export { MemoryBankError, type MemoryBankErrorCode } from "./errors.js";
export { Paged, type PageShape } from "./paging.js";
export type { RequestOptions, TransportOptions } from "./transport.js";
