/**
 * Vercel AI SDK: the `UIMessage[]` of a chat, kept in a memorybank thread.
 *
 * ```ts
 * import { convertToModelMessages, streamText, type UIMessage } from "ai";
 * import { loadChat, MemoryBank, saveChat } from "@memorybank/client";
 *
 * const mb = new MemoryBank({ baseUrl, apiKey });
 * // POST /api/chat { id, messages }
 * const result = streamText({ model, messages: await convertToModelMessages(messages) });
 * return result.toUIMessageStreamResponse({
 *   originalMessages: messages,
 *   onFinish: ({ messages }) => saveChat(mb, id, messages, { userId }),
 * });
 * // and the page: useChat({ id, messages: await loadChat(mb, id, { userId }) })
 * ```
 *
 * One chat is one memorybank thread (`thread id == chat id`), created on the first save
 * and owned by `userId` (every call is made as that user: a chat of another owner is
 * refused, `thread_forbidden`). Each `UIMessage` is one entry: its role, its text (text
 * parts, and tool calls as `name(input)`) as the content, so search, `history` and
 * `buildContext` see the conversation, and the message itself, whole, in the entry's
 * `state` under `ai_sdk`. An entry written otherwise (the Python library, a
 * `MemorybankSession`) with a `user`, `assistant` or `system` role, text content and no
 * tool call is read as a text message whose id is the entry's; a tool call or result
 * written otherwise cannot be read as a `UIMessage` part, and `loadChat` rejects with
 * `invalid_input` (`status` 0) rather than drop it.
 *
 * The package needs `ai` only for its types: nothing of it is loaded at run time.
 */

import type { UIMessage } from "ai";
import type { Entry, MemoryBank } from "./client.js";
import { MemoryBankError } from "./errors.js";
import type { RequestOptions } from "./transport.js";

type Json = Record<string, unknown>;

/** The key of an entry's `state` that holds the `UIMessage`. */
export const CHAT_STATE_KEY = "ai_sdk";

const PAGE = 1000;

/** Options of `loadChat` / `saveChat`. */
export interface ChatOptions extends RequestOptions {
  /** Owner of the chat's thread; every call is made as this user (fail closed). */
  userId?: string;
  /** The agent recorded on a thread `saveChat` creates. */
  agentId?: string;
}

/** The chat's messages, oldest first, as they were saved (`[]` for a chat never saved). */
export async function loadChat<M extends UIMessage = UIMessage>(
  client: MemoryBank,
  chatId: string,
  options: ChatOptions = {},
): Promise<M[]> {
  const mb = scoped(client, options);
  const entries = await entriesOf(mb, chatId, options);
  return entries === undefined ? [] : entries.map((e) => messageOf(e) as M);
}

/**
 * Make the chat hold exactly `messages` (what `onFinish` of `toUIMessageStreamResponse`
 * gives). When the stored chat is a prefix of them only the new messages are written;
 * when it was rewritten (a regenerated answer, an edit, a message updated in place) the
 * messages from the first that differs are written anew, all or nothing, and then the
 * stale ones deleted: bad input leaves the chat as it was, an interrupted save loses no
 * message. Two saves of one chat at once are not serialized (the last one wins).
 */
export async function saveChat(
  client: MemoryBank,
  chatId: string,
  messages: readonly UIMessage[],
  options: ChatOptions = {},
): Promise<void> {
  if (!Array.isArray(messages)) throw new TypeError("messages must be an array of UIMessage");
  const given = messages.map((m, i) => plain(m, i));
  const mb = scoped(client, options);
  let entries = await entriesOf(mb, chatId, options);
  if (entries === undefined) {
    await ensureThread(mb, chatId, options);
    entries = [];
  }
  let shared = 0;
  while (
    shared < entries.length &&
    shared < given.length &&
    sameJson(messageOf(entries[shared] as Entry), given[shared])
  ) {
    shared++;
  }
  const fresh = given.slice(shared);
  if (fresh.length > 0) await mb.entries.addMany(chatId, fresh.map(entryOf) as never, requestOf(options));
  for (const stale of entries.slice(shared)) {
    try {
      await mb.entries.delete(chatId, stale.id, requestOf(options));
    } catch (error) {
      if (!(error instanceof MemoryBankError && error.code === "not_found")) throw error;
    }
  }
}

function scoped(client: MemoryBank, options: ChatOptions): MemoryBank {
  return options.userId === undefined ? client : client.withUser(options.userId);
}

function requestOf(options: ChatOptions): RequestOptions {
  const { userId: _u, agentId: _a, ...request } = options;
  return request;
}

/** The thread's entries, oldest first; `undefined` when there is no such thread. */
async function entriesOf(mb: MemoryBank, chatId: string, options: ChatOptions): Promise<Entry[] | undefined> {
  const newestFirst: Entry[] = [];
  try {
    for await (const page of mb.entries
      .list(chatId, { ...requestOf(options), limit: PAGE, order: "desc" })
      .pages()) {
      newestFirst.push(...page.items);
    }
  } catch (error) {
    if (error instanceof MemoryBankError && error.code === "not_found") return undefined;
    throw error;
  }
  return newestFirst.reverse();
}

async function ensureThread(mb: MemoryBank, chatId: string, options: ChatOptions): Promise<void> {
  try {
    const agent = options.agentId === undefined ? {} : { agentId: options.agentId };
    await mb.threads.create({ threadId: chatId, ...agent, ...requestOf(options) });
  } catch (error) {
    if (!(error instanceof MemoryBankError && error.code === "conflict")) throw error; // made meanwhile
  }
}

/** The message as JSON keeps it (what a load gives back), checked to be a `UIMessage`. */
function plain(message: UIMessage, index: number): Json {
  const m = message as unknown;
  if (
    !isRecord(m) ||
    typeof m.id !== "string" ||
    m.id === "" ||
    !["user", "assistant", "system"].includes(m.role as string) ||
    !Array.isArray(m.parts)
  ) {
    throw new TypeError(`messages[${index}] is not a UIMessage (id, role and parts)`);
  }
  return JSON.parse(JSON.stringify(m)) as Json;
}

function entryOf(message: Json): Json {
  return { role: message.role, content: textOf(message), state: { [CHAT_STATE_KEY]: message } };
}

/** What a person would read of a message: the text its entry is searched by. */
function textOf(message: Json): string {
  const pieces: string[] = [];
  for (const part of message.parts as unknown[]) {
    if (!isRecord(part) || typeof part.type !== "string") continue;
    if (part.type === "text" && typeof part.text === "string") pieces.push(part.text);
    else if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
      const name = part.type === "dynamic-tool" ? String(part.toolName) : part.type.slice(5);
      pieces.push(`${name}(${JSON.stringify(part.input ?? null)})`);
    }
  }
  return pieces.join("\n");
}

/** The `UIMessage` an entry holds, or the text message a plain chat entry stands for. */
function messageOf(entry: Entry): Json {
  const e = entry as unknown as Json;
  const held = isRecord(e.state) ? e.state[CHAT_STATE_KEY] : undefined;
  if (isRecord(held)) return held;
  const role = e.role as string | null | undefined;
  const calls = Array.isArray(e.tool_calls) ? e.tool_calls.length : 0;
  const item = isRecord(e.item) ? e.item : undefined;
  if (
    (role === "user" || role === "assistant" || role === "system") &&
    calls === 0 &&
    (item === undefined || item.type === undefined || item.type === "message")
  ) {
    const text =
      typeof e.content === "string"
        ? e.content
        : Array.isArray(e.content)
          ? e.content
              .filter(isRecord)
              .map((p) => (typeof p.text === "string" ? p.text : ""))
              .filter((t) => t !== "")
              .join("\n")
          : "";
    return { id: entry.id, role, parts: text === "" ? [] : [{ type: "text", text }] };
  }
  throw new MemoryBankError({
    code: "invalid_input",
    status: 0,
    message: `entry ${entry.id} of chat ${String(e.thread_id)} is not a text message (a tool call or result)`,
    field: "thread_id",
  });
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (isRecord(a) && isRecord(b) && !Array.isArray(b)) {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]))
    );
  }
  return false;
}

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
