/**
 * `@memorybank/client`: the memorybank HTTP API for TypeScript, with an OpenAI Agents
 * JS session (`MemorybankSession`), a LangGraph.js checkpointer (`MemorybankSaver`) and the
 * Vercel AI SDK's chats (`loadChat`, `saveChat`).
 * `@memorybank/client/core` is the client alone.
 */

export { CHAT_STATE_KEY, type ChatOptions, loadChat, saveChat } from "./ai-sdk.js";
export * from "./core.js";
export { MemorybankSaver } from "./langgraph.js";
export { MAX_SESSION_ITEMS, MemorybankSession, type MemorybankSessionOptions } from "./openai-agents.js";
