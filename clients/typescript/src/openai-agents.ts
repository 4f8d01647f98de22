/**
 * OpenAI Agents JS: a `Session` on the memorybank service.
 *
 * ```ts
 * import { Agent, run } from "@openai/agents";
 * import { MemoryBank, MemorybankSession } from "@memorybank/client";
 *
 * const mb = new MemoryBank({ baseUrl, apiKey });
 * const session = new MemorybankSession("conversation-42", mb, { userId: "alice" });
 * await run(agent, "Hello", { session });
 * ```
 *
 * One session is one memorybank thread (`thread id == session id`), created on first use
 * and owned by `userId` (every call is made as that user: a thread of another owner is
 * refused, `thread_forbidden`). Each item is one entry, stored as the Responses API item
 * the Python `MemorybankSession` stores (see `items.ts`), so a conversation started in
 * Python continues here and back, and the thread is visible to `history`, search and
 * `buildContext`.
 */

import type { AgentInputItem, Session } from "@openai/agents";
import type { Entry, MemoryBank } from "./client.js";
import { MemoryBankError } from "./errors.js";
import { callNamesOf, fromResponsesItem, toResponsesItem } from "./items.js";

type Json = Record<string, unknown>;

/** The most `getItems()` returns without a limit (the history route's window). */
export const MAX_SESSION_ITEMS = 10_000;
const MAX_PAGE = 1000;

/** Options of a `MemorybankSession`. */
export interface MemorybankSessionOptions {
  /** Owner of the thread; every call is made as this user (fail closed). */
  userId?: string;
  /** The agent recorded on a thread this session creates. */
  agentId?: string;
  /** The default `limit` of `getItems()` (the SDK's `SessionSettings.limit`). */
  limit?: number;
}

/**
 * The Agents SDK `Session` on a `MemoryBank` client.
 *
 * `getItems(limit)` returns the newest `limit` items oldest first, except that a tool
 * output whose call falls outside the window is left out (a window never hands the model
 * an output without its call). `popItem()` removes the newest item whatever it is.
 * `addItems()` is all-or-nothing, and safe to retry (one idempotency key per call).
 */
export class MemorybankSession implements Session {
  readonly sessionId: string;
  readonly userId: string | undefined;
  readonly agentId: string | undefined;
  readonly limit: number | undefined;
  private readonly mb: MemoryBank;
  private ready: Promise<void> | undefined;

  constructor(sessionId: string, client: MemoryBank, options: MemorybankSessionOptions = {}) {
    if (!sessionId) throw new TypeError("sessionId is required");
    this.sessionId = sessionId;
    this.userId = options.userId;
    this.agentId = options.agentId;
    this.limit = options.limit;
    this.mb = options.userId === undefined ? client : client.withUser(options.userId);
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    await this.thread();
    const resolved = limit ?? this.limit;
    if (resolved !== undefined && resolved <= 0) return [];
    const messages = (await this.mb.history(this.sessionId, {
      last: Math.min(resolved ?? MAX_SESSION_ITEMS, MAX_SESSION_ITEMS),
    })) as Json[];
    const names = callNamesOf(messages);
    return messages.map((m) => fromResponsesItem(m, names) as AgentInputItem);
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.thread();
    const messages = items.map((item) => toResponsesItem(item as unknown as Json));
    await this.mb.entries.addMany(this.sessionId, messages as never);
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    await this.thread();
    for (;;) {
      const newest = await this.newestEntry();
      if (newest === undefined) return undefined;
      const message = entryMessage(newest as unknown as Json);
      let names = new Map<string, string>();
      if (message.type === "function_call_output") {
        names = callNamesOf((await this.mb.history(this.sessionId, { last: 100 })) as Json[]);
      }
      try {
        await this.mb.entries.delete(this.sessionId, newest.id);
      } catch (error) {
        if (error instanceof MemoryBankError && error.code === "not_found") continue; // popped by another caller
        throw error;
      }
      return fromResponsesItem(message, names) as AgentInputItem;
    }
  }

  async clearSession(): Promise<void> {
    await this.thread();
    await this.mb.entries.clear(this.sessionId);
  }

  /**
   * The newest entry, whatever it is. A window of the entries route leaves out a tool
   * output whose call it cut off, so the window grows until it holds the newest entry's
   * call (at most the route's page size).
   */
  private async newestEntry(): Promise<Entry | undefined> {
    const total = await this.mb.entries.count(this.sessionId);
    if (total === 0) return undefined;
    for (let limit = 2; ; limit *= 2) {
      const capped = Math.min(limit, MAX_PAGE);
      const page = await this.mb.entries.list(this.sessionId, { limit: capped, order: "desc" }).page();
      if (page.items[0] !== undefined || capped >= total || capped === MAX_PAGE) return page.items[0];
    }
  }

  /** The session's thread, created on first use (checked once per session object). */
  private thread(): Promise<void> {
    this.ready ??= this.ensure().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async ensure(): Promise<void> {
    try {
      await this.mb.threads.get(this.sessionId);
      return;
    } catch (error) {
      if (!(error instanceof MemoryBankError && error.code === "not_found")) throw error;
    }
    try {
      await this.mb.threads.create({ threadId: this.sessionId, agentId: this.agentId });
    } catch (error) {
      if (!(error instanceof MemoryBankError && error.code === "conflict")) throw error; // made meanwhile
    }
  }
}

/** The message an entry stands for, as the library's `Entry.to_message()`. */
function entryMessage(entry: Json): Json {
  if (isRecord(entry.item)) return entry.item;
  const message: Json = { role: entry.role, content: entry.content };
  if (entry.name !== null && entry.name !== undefined) message.name = entry.name;
  if (Array.isArray(entry.tool_calls) && entry.tool_calls.length > 0) {
    message.tool_calls = entry.tool_calls.map((call: Json) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  if (entry.tool_call_id !== null && entry.tool_call_id !== undefined)
    message.tool_call_id = entry.tool_call_id;
  if (isRecord(entry.extra)) Object.assign(message, entry.extra);
  return message;
}

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
