/**
 * `@memorybank/client`: the memorybank HTTP API for TypeScript, with an OpenAI Agents
 * JS session (`MemorybankSession`) and a LangGraph.js checkpointer (`MemorybankSaver`).
 * `@memorybank/client/core` is the client alone.
 */
export * from "./core.js";
export { MemorybankSaver } from "./langgraph.js";
export { MAX_SESSION_ITEMS, MemorybankSession, type MemorybankSessionOptions } from "./openai-agents.js";
