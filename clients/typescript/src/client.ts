/**
 * `MemoryBank`: the memorybank HTTP API with the library's names, in camelCase.
 *
 * The request and response types come from the server's OpenAPI schema
 * (`openapi.json`, generated into `schema.gen.ts` at build time); this layer only
 * names the calls, turns camelCase options into the wire's snake_case fields, throws
 * `MemoryBankError` for error responses and pages lists. Responses are returned as
 * the server sends them (snake_case fields, as the Python library's records).
 */

import createClient from "openapi-fetch";
import { MemoryBankError, retryAfterSeconds } from "./errors.js";
import { Paged, type PageShape } from "./paging.js";
import type { paths } from "./schema.gen.js";
import { type RequestOptions, Transport, type TransportOptions } from "./transport.js";

// -- types derived from the schema ---------------------------------------------------

type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;
/** `T` with its keys in camelCase (`thread_id` -> `threadId`). */
export type Camel<T> = { [K in keyof T as K extends string ? CamelCase<K> : K]: T[K] };

type Op<P extends keyof paths, M extends string> = paths[P] extends Record<M, infer O> ? O : never;
/** The JSON body of route `P`, method `M`, with camelCase keys. */
/** A route's JSON body as the server spells it (snake_case). */
type WireBodyOf<P extends keyof paths, M extends string> =
  Op<P, M> extends {
    requestBody?: { content: { "application/json": infer B } };
  }
    ? B
    : never;

export type BodyOf<P extends keyof paths, M extends string> =
  Op<P, M> extends {
    requestBody?: { content: { "application/json": infer B } };
  }
    ? Camel<B>
    : never;
/** The query parameters of route `P`, method `M`, with camelCase keys. */
export type QueryOf<P extends keyof paths, M extends string> =
  Op<P, M> extends {
    parameters: { query?: infer Q };
  }
    ? Camel<NonNullable<Q>>
    : never;
/** The JSON answer of route `P`, method `M` (its 200 or 201 response). */
export type ResultOf<P extends keyof paths, M extends string> =
  Op<P, M> extends {
    responses: infer R;
  }
    ? R extends { 200: { content: { "application/json": infer D } } }
      ? D
      : R extends { 201: { content: { "application/json": infer D } } }
        ? D
        : undefined
    : never;

type ItemOf<T> = T extends { items: (infer I)[] } ? I : T extends (infer I)[] ? I : never;

export type Thread = ResultOf<"/v1/threads/{thread_id}", "get">;
export type Entry = ResultOf<"/v1/threads/{thread_id}/entries/{entry_id}", "get">;
export type Message = ItemOf<ResultOf<"/v1/threads/{thread_id}/history", "get">>;
export type MessageInput = Omit<BodyOf<"/v1/threads/{thread_id}/entries", "post">, "idempotencyKey">;
export type Hit = ItemOf<ResultOf<"/v1/search", "post">>;
export type Context = ResultOf<"/v1/threads/{thread_id}/context", "post">;
export type Fact = ResultOf<"/v1/facts/{fact_id}", "get">;
export type Document = ResultOf<"/v1/documents/{document_id}", "get">;
export type ConsolidationReport = ResultOf<"/v1/consolidate", "post">;
export type Profile = ResultOf<"/v1/users/{user_id}/profile", "get">;
export type Summary = ItemOf<ResultOf<"/v1/summaries", "get">>;
export type Session = ResultOf<"/v1/sessions/{session_id}", "get">;
export type Branch = ItemOf<ResultOf<"/v1/threads/{thread_id}/branches", "get">>;
export type Entity = ResultOf<"/v1/graph/entities/{entity_id}", "get">;
export type Relation = ResultOf<"/v1/graph/relations/{relation_id}", "get">;
/** One change of the change feed (`GET /v1/events`): ids; `content` only when asked. */
export type MemoryEvent = ItemOf<ResultOf<"/v1/events", "get">>;
/** A page of the change feed: `nextCursor` is the `after` of the next read. */
export interface EventPage {
  items: MemoryEvent[];
  /** The last event's cursor, or the given `after` when nothing is new. */
  nextCursor: string | null;
}

/** How to reach the server. */
export interface MemoryBankOptions extends TransportOptions {
  /** The server, e.g. `http://127.0.0.1:8080` (no trailing `/v1`). */
  baseUrl: string;
  /** An API key (`memorybank keys create`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The end user every call acts for (`X-User-Id`): the server confines the calls to them. */
  userId?: string;
  /** The agent (`X-Agent-Id`, and the default `agentId` of writes and `buildContext`). */
  agentId?: string;
}

type Options<T> = T & RequestOptions;

const REQUEST_KEYS = new Set(["signal", "timeoutMs", "headers"]);

function snakeKey(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** `{threadId: x, signal}` -> `{thread_id: x}`: top-level keys only, `undefined` dropped. */
function wire(options: object | undefined, renames: Record<string, string> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    if (value === undefined || REQUEST_KEYS.has(key)) continue;
    out[renames[key] ?? snakeKey(key)] = value;
  }
  return out;
}

function requestOptions(options: RequestOptions | undefined): RequestOptions {
  if (options === undefined) return {};
  const { signal, timeoutMs, headers } = options;
  return { signal, timeoutMs, headers } as RequestOptions;
}

type Answer<D> = { data?: D; error?: unknown; response: Response };

/** An id a header carries as it is: visible ASCII, spaces inside only. */
const PLAIN_ID = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * The header naming id `id`: `name` itself when the id is plain ASCII, else `name-encoded`
 * with the id's UTF-8 bytes percent-encoded (`fetch` sends no other bytes than Latin-1,
 * and would trim spaces around a value). The server decodes it to the exact id.
 */
function idHeader(name: string, id: string): Record<string, string> {
  return PLAIN_ID.test(id) ? { [name]: id } : { [`${name}-encoded`]: encodeURIComponent(id) };
}

function newKey(): string {
  return globalThis.crypto.randomUUID();
}

/** The items of a list answer: `{items}` (or a bare list, from routes not yet paged). */
/** The items of a list route's one page (`{items, next_cursor}`, the shape of every list). */
function itemsOf<T>(data: { items: T[] } | undefined): T[] {
  return data === undefined ? [] : data.items;
}

/**
 * A client of the memorybank HTTP API.
 *
 * ```ts
 * const mb = new MemoryBank({ baseUrl: "http://127.0.0.1:8080", apiKey, userId: "alice" });
 * const thread = await mb.threads.create({ title: "Support" });
 * await mb.entries.add(thread.id, { role: "user", content: "Hello" });
 * const messages = await mb.history(thread.id, { last: 20 });
 * ```
 */
export class MemoryBank {
  readonly baseUrl: string;
  readonly userId: string | undefined;
  readonly agentId: string | undefined;
  /** Threads: create, get, list, update, delete. */
  readonly threads: Threads;
  /** Entries: add (one or a batch), get, list, count, delete, clear. */
  readonly entries: Entries;
  readonly branches: Branches;
  readonly facts: Facts;
  readonly coreFacts: CoreFacts;
  readonly documents: Documents;
  readonly summaries: Summaries;
  readonly snapshots: Snapshots;
  readonly sessions: Sessions;
  readonly graph: Graph;
  readonly cortex: Cortex;
  readonly consolidation: Consolidation;
  /** The change feed: `list` after a cursor, `follow` every change as it commits. */
  readonly events: Events;
  /** @internal */
  readonly api: ReturnType<typeof createClient<paths>>;
  /** @internal */
  readonly transport: Transport;
  private readonly apiKey: string;

  constructor(options: MemoryBankOptions);
  /** @internal a copy sharing the connection, for another user */
  constructor(options: MemoryBankOptions, shared: { api: MemoryBank["api"]; transport: Transport });
  constructor(options: MemoryBankOptions, shared?: { api: MemoryBank["api"]; transport: Transport }) {
    if (!options.baseUrl) throw new TypeError("baseUrl is required");
    if (!options.apiKey) throw new TypeError("apiKey is required");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.userId = options.userId;
    this.agentId = options.agentId;
    this.transport = shared?.transport ?? new Transport(options);
    this.api = shared?.api ?? createClient<paths>({ baseUrl: this.baseUrl });
    this.threads = new Threads(this);
    this.entries = new Entries(this);
    this.branches = new Branches(this);
    this.facts = new Facts(this);
    this.coreFacts = new CoreFacts(this);
    this.documents = new Documents(this);
    this.summaries = new Summaries(this);
    this.snapshots = new Snapshots(this);
    this.sessions = new Sessions(this);
    this.graph = new Graph(this);
    this.cortex = new Cortex(this);
    this.consolidation = new Consolidation(this);
    this.events = new Events(this);
  }

  /** A client confined to `userId` (as the library's `memory.scoped(user_id=...)`). */
  withUser(userId: string): MemoryBank {
    return new MemoryBank(
      { baseUrl: this.baseUrl, apiKey: this.apiKey, userId, agentId: this.agentId },
      { api: this.api, transport: this.transport },
    );
  }

  /** The run's working memory (`run(runId).get/set/delete/items/clear`). */
  working(runId: string): Working {
    return new Working(this, runId);
  }

  /** The last `last` messages of a thread, oldest first, shaped as the Python `history()`. */
  async history(threadId: string, options: Options<{ last?: number }> = {}): Promise<Message[]> {
    const data = await this.call(
      this.api.GET("/v1/threads/{thread_id}/history", {
        params: { path: { thread_id: threadId }, query: wire(options) },
        ...this.init(options),
      }),
    );
    return itemsOf(data);
  }

  /**
   * The best entries, documents (and facts, with `kinds`) for `query`:
   * `search("bees", { k: 5 })`, or the whole request as one object,
   * `search({ query: "bees", k: 5 })`.
   */
  search(query: string, options?: Options<Omit<BodyOf<"/v1/search", "post">, "query">>): Promise<Hit[]>;
  search(request: Options<BodyOf<"/v1/search", "post">>): Promise<Hit[]>;
  async search(
    query: string | Options<BodyOf<"/v1/search", "post">>,
    options: Options<Omit<BodyOf<"/v1/search", "post">, "query">> = {},
  ): Promise<Hit[]> {
    const request = typeof query === "string" ? { ...options, query } : query;
    const data = await this.call(
      this.api.POST("/v1/search", { body: wire(request) as never, ...this.init(request) }),
    );
    return itemsOf(data);
  }

  /** What to send to the model for a thread: `{ messages, token_count, ... }`. */
  buildContext(
    threadId: string,
    options: Options<
      Omit<BodyOf<"/v1/threads/{thread_id}/context", "post">, "agentId"> & {
        agentId?: string;
        input?: string;
      }
    >,
  ): Promise<Context> {
    const body = wire({ ...options, agentId: options.agentId ?? this.agentId }, { input: "current_input" });
    return this.call(
      this.api.POST("/v1/threads/{thread_id}/context", {
        params: { path: { thread_id: threadId } },
        body: body as never,
        ...this.init(options),
      }),
    );
  }

  /** Sliding-window compaction of a thread. */
  compact(
    threadId: string,
    options: Options<BodyOf<"/v1/threads/{thread_id}/compact", "post">>,
  ): Promise<ResultOf<"/v1/threads/{thread_id}/compact", "post">> {
    return this.call(
      this.api.POST("/v1/threads/{thread_id}/compact", {
        params: { path: { thread_id: threadId } },
        body: wire(options) as never,
        ...this.init(options),
      }),
    );
  }

  /** Undo a reversible compaction; the number of entries restored. */
  async restore(threadId: string, options?: RequestOptions): Promise<number> {
    const data = await this.call(
      this.api.POST("/v1/threads/{thread_id}/restore", {
        params: { path: { thread_id: threadId } },
        ...this.init(options),
      }),
    );
    return data.count;
  }

  /** Merge the user's duplicate facts and supersede contradicted ones (`dryRun`: only report). */
  consolidate(options: Options<BodyOf<"/v1/consolidate", "post">> = {}): Promise<ConsolidationReport> {
    return this.call(
      this.api.POST("/v1/consolidate", { body: wire(options) as never, ...this.init(options) }),
    );
  }

  /** Say whether a recalled fact was useful (`false`: wrong or unhelpful); the fact after. */
  feedback(
    factId: string,
    useful: boolean,
    options: Options<Omit<BodyOf<"/v1/feedback", "post">, "factId" | "useful">> = {},
  ): Promise<Fact> {
    return this.call(
      this.api.POST("/v1/feedback", {
        body: { fact_id: factId, useful, ...wire(options) } as never,
        ...this.init(options),
      }),
    );
  }

  /** A user's current facts grouped by attribute (name, preferences, plans, ...), each with
   * its provenance and times; `agentId`: only the facts that agent sees. */
  profile(userId: string, options: Options<{ agentId?: string }> = {}): Promise<Profile> {
    return this.call(
      this.api.GET("/v1/users/{user_id}/profile", {
        params: { path: { user_id: userId }, query: wire(options) as never },
        ...this.init(options),
      }),
    );
  }

  /** Erase everything of a user in the tenant; the number of records erased. */
  async forgetUser(userId: string, options?: RequestOptions): Promise<number> {
    const data = await this.call(
      this.api.DELETE("/v1/users/{user_id}", {
        params: { path: { user_id: userId } },
        ...this.init(options),
      }),
    );
    return data.count;
  }

  /** @internal headers and the fetch of one call */
  init(options: RequestOptions | undefined): {
    headers: Record<string, string>;
    fetch: (r: Request) => Promise<Response>;
  } {
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (this.userId !== undefined) Object.assign(headers, idHeader("x-user-id", this.userId));
    if (this.agentId !== undefined) Object.assign(headers, idHeader("x-agent-id", this.agentId));
    Object.assign(headers, options?.headers);
    return { headers, fetch: this.transport.fetcher(requestOptions(options)) };
  }

  /** @internal the answer's data, or its error as a `MemoryBankError` */
  async call<D>(answer: Promise<Answer<D>>): Promise<D> {
    const { data, error, response } = await answer;
    if (response.ok) return data as D;
    const body = (typeof error === "object" && error !== null ? error : {}) as Record<string, unknown>;
    const str = (value: unknown) => (typeof value === "string" ? value : undefined);
    throw new MemoryBankError({
      code: str(body.code) ?? `http_${response.status}`,
      message: str(body.message) ?? `HTTP ${response.status}`,
      status: response.status,
      field: str(body.field),
      requestId: str(body.request_id) ?? response.headers.get("x-request-id"),
      retryAfter: retryAfterSeconds(response.headers.get("retry-after")),
    });
  }

  /** @internal a list route as a `Paged` */
  paged<T>(fetchPage: (cursor: string | undefined) => Promise<PageShape<T>>): Paged<T> {
    return new Paged(fetchPage);
  }
}

/** The base of every resource: its client. */
class Resource {
  constructor(protected readonly mb: MemoryBank) {}
}

export class Threads extends Resource {
  /** Create a thread (`threadId` given: that id; else one is made). */
  create(options: Options<BodyOf<"/v1/threads", "post">> = {}): Promise<Thread> {
    const body = wire({ agentId: this.mb.agentId, ...options });
    return this.mb.call(this.mb.api.POST("/v1/threads", { body, ...this.mb.init(options) }));
  }

  get(threadId: string, options?: RequestOptions): Promise<Thread> {
    return this.mb.call(
      this.mb.api.GET("/v1/threads/{thread_id}", {
        params: { path: { thread_id: threadId } },
        ...this.mb.init(options),
      }),
    );
  }

  /** The caller's threads, most recently updated first (`for await`). */
  list(options: Options<QueryOf<"/v1/threads", "get">> = {}): Paged<Thread> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/threads", {
          params: { query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  update(threadId: string, changes: Options<BodyOf<"/v1/threads/{thread_id}", "patch">>): Promise<Thread> {
    return this.mb.call(
      this.mb.api.PATCH("/v1/threads/{thread_id}", {
        params: { path: { thread_id: threadId } },
        body: wire(changes),
        ...this.mb.init(changes),
      }),
    );
  }

  /** Delete a thread with its entries and branches (`not_found` when there is none). */
  async delete(threadId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/threads/{thread_id}", {
        params: { path: { thread_id: threadId } },
        ...this.mb.init(options),
      }),
    );
  }
}

export class Entries extends Resource {
  /**
   * Append one message. An idempotency key is made when none is given, so the call
   * is retried safely: a repeat returns the stored entry, never a second one.
   */
  add(
    threadId: string,
    message: MessageInput,
    options: Options<{ idempotencyKey?: string }> = {},
  ): Promise<Entry> {
    const key = options.idempotencyKey ?? newKey();
    const init = this.mb.init(options);
    return this.mb.call(
      this.mb.api.POST("/v1/threads/{thread_id}/entries", {
        params: { path: { thread_id: threadId } },
        body: wire(message) as never,
        ...init,
        headers: { ...init.headers, "idempotency-key": key },
      }),
    );
  }

  /** Append several messages atomically (all or none), under one idempotency key. */
  async addMany(
    threadId: string,
    messages: MessageInput[],
    options: Options<Omit<BodyOf<"/v1/threads/{thread_id}/entries/batch", "post">, "messages">> = {},
  ): Promise<Entry[]> {
    const key = options.idempotencyKey ?? newKey();
    const init = this.mb.init(options);
    const data = await this.mb.call(
      this.mb.api.POST("/v1/threads/{thread_id}/entries/batch", {
        params: { path: { thread_id: threadId } },
        body: {
          ...wire({ ...options, idempotencyKey: undefined }),
          messages: messages.map((m) => wire(m)),
        } as never,
        ...init,
        headers: { ...init.headers, "idempotency-key": key },
      }),
    );
    return itemsOf(data);
  }

  /** Entries, paged from the newest back; each page in `order` (default oldest first). */
  list(
    threadId: string,
    options: Options<QueryOf<"/v1/threads/{thread_id}/entries", "get">> = {},
  ): Paged<Entry> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/threads/{thread_id}/entries", {
          params: { path: { thread_id: threadId }, query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  get(threadId: string, entryId: string, options: Options<{ branch?: string }> = {}): Promise<Entry> {
    return this.mb.call(
      this.mb.api.GET("/v1/threads/{thread_id}/entries/{entry_id}", {
        params: { path: { thread_id: threadId, entry_id: entryId }, query: wire(options) },
        ...this.mb.init(options),
      }),
    );
  }

  async count(threadId: string, options: Options<{ branch?: string }> = {}): Promise<number> {
    const data = await this.mb.call(
      this.mb.api.GET("/v1/threads/{thread_id}/count", {
        params: { path: { thread_id: threadId }, query: wire(options) },
        ...this.mb.init(options),
      }),
    );
    return data.count;
  }

  async delete(
    threadId: string,
    entryId: string,
    options: Options<QueryOf<"/v1/threads/{thread_id}/entries/{entry_id}", "delete">> = {},
  ): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/threads/{thread_id}/entries/{entry_id}", {
        params: { path: { thread_id: threadId, entry_id: entryId }, query: wire(options) },
        ...this.mb.init(options),
      }),
    );
  }

  /** Delete every entry of a branch; how many were deleted. */
  async clear(threadId: string, options: Options<{ branch?: string }> = {}): Promise<number> {
    const data = await this.mb.call(
      this.mb.api.DELETE("/v1/threads/{thread_id}/entries", {
        params: { path: { thread_id: threadId }, query: wire(options) },
        ...this.mb.init(options),
      }),
    );
    return data.count;
  }
}

export class Branches extends Resource {
  /** Fork `name` (from `fromEntry`, else the current branch's end). */
  create(threadId: string, name: string, options: Options<{ fromEntry?: string }> = {}): Promise<Branch> {
    return this.mb.call(
      this.mb.api.POST("/v1/threads/{thread_id}/branches", {
        params: { path: { thread_id: threadId } },
        body: { name, ...wire(options) },
        ...this.mb.init(options),
      }),
    );
  }

  list(threadId: string, options: RequestOptions = {}): Paged<Branch> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/threads/{thread_id}/branches", {
          params: { path: { thread_id: threadId }, query: { cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  async delete(threadId: string, name: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/threads/{thread_id}/branches/{name}", {
        params: { path: { thread_id: threadId, name } },
        ...this.mb.init(options),
      }),
    );
  }

  /** Make `name` the thread's current branch. */
  checkout(threadId: string, name: string, options?: RequestOptions): Promise<Thread> {
    return this.mb.call(
      this.mb.api.POST("/v1/threads/{thread_id}/checkout", {
        params: { path: { thread_id: threadId } },
        body: { name },
        ...this.mb.init(options),
      }),
    );
  }

  /** Delete the entries after `entryId`; how many were deleted. */
  async rewind(threadId: string, entryId: string, options?: RequestOptions): Promise<number> {
    const data = await this.mb.call(
      this.mb.api.POST("/v1/threads/{thread_id}/rewind", {
        params: { path: { thread_id: threadId } },
        body: { entry_id: entryId },
        ...this.mb.init(options),
      }),
    );
    return data.count;
  }
}

export class Events extends Resource {
  /**
   * The tenant's changes after `after` (none: from the oldest kept), oldest first (with
   * `userId`, that user's only); `wait` seconds long-polls when nothing is new. A cursor
   * older than the events kept rejects with `code` `"cursor_expired"` (410). `content`: each
   * event's `content` is the content of the entry, fact or document it names, read now
   * (none once deleted).
   */
  async list(
    options: Options<{
      after?: string | null;
      kinds?: string[];
      limit?: number;
      wait?: number;
      content?: boolean;
    }> = {},
  ): Promise<EventPage> {
    const { after, kinds, limit, wait, content } = options;
    const query = wire({ after: after ?? undefined, kinds: kinds?.join(","), limit, wait, content });
    const data = await this.mb.call(
      this.mb.api.GET("/v1/events", { params: { query }, ...this.mb.init(options) }),
    );
    return { items: data.items, nextCursor: data.next_cursor ?? null };
  }

  /** Every change after `after`, as it commits (long polls of `wait` seconds; `for await`). */
  async *follow(
    options: Options<{ after?: string | null; kinds?: string[]; wait?: number; content?: boolean }> = {},
  ): AsyncGenerator<MemoryEvent> {
    let after = options.after ?? null;
    for (;;) {
      const page = await this.list({ ...options, after, wait: options.wait ?? 30 });
      for (const event of page.items) yield event;
      after = page.nextCursor;
      options.signal?.throwIfAborted();
    }
  }
}

export class Facts extends Resource {
  add(content: string, options: Options<Omit<BodyOf<"/v1/facts", "post">, "content">> = {}): Promise<Fact> {
    return this.mb.call(
      this.mb.api.POST("/v1/facts", {
        body: { content, ...wire({ agentId: this.mb.agentId, ...options }) },
        ...this.mb.init(options),
      }),
    );
  }

  get(factId: string, options?: RequestOptions): Promise<Fact> {
    return this.mb.call(
      this.mb.api.GET("/v1/facts/{fact_id}", {
        params: { path: { fact_id: factId } },
        ...this.mb.init(options),
      }),
    );
  }

  list(options: Options<QueryOf<"/v1/facts", "get">> = {}): Paged<Fact> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/facts", {
          params: { query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  async search(
    query: string,
    options: Options<Omit<BodyOf<"/v1/facts/search", "post">, "query">> = {},
  ): Promise<Fact[]> {
    const data = await this.mb.call(
      this.mb.api.POST("/v1/facts/search", { body: { query, ...wire(options) }, ...this.mb.init(options) }),
    );
    return itemsOf(data);
  }

  /** Change a fact (`supersede`: keep the current value in its history). */
  update(factId: string, changes: Options<BodyOf<"/v1/facts/{fact_id}", "patch">>): Promise<Fact> {
    return this.mb.call(
      this.mb.api.PATCH("/v1/facts/{fact_id}", {
        params: { path: { fact_id: factId } },
        body: wire(changes),
        ...this.mb.init(changes),
      }),
    );
  }

  /** Every value of a fact, oldest first (every page). */
  history(factId: string, options?: RequestOptions): Promise<Fact[]> {
    return this.mb
      .paged((cursor) =>
        this.mb.call(
          this.mb.api.GET("/v1/facts/{fact_id}/history", {
            params: { path: { fact_id: factId }, query: { cursor } },
            ...this.mb.init(options),
          }),
        ),
      )
      .all();
  }

  async delete(factId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/facts/{fact_id}", {
        params: { path: { fact_id: factId } },
        ...this.mb.init(options),
      }),
    );
  }
}

export type CoreFact = ResultOf<"/v1/core-facts/{key}", "get">;

export class CoreFacts extends Resource {
  /** The current value of `key` (`not_found` when unset). */
  async get(key: string, options?: RequestOptions): Promise<string> {
    const data = await this.mb.call(
      this.mb.api.GET("/v1/core-facts/{key}", { params: { path: { key } }, ...this.mb.init(options) }),
    );
    return data.value;
  }

  async set(key: string, value: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.PUT("/v1/core-facts/{key}", {
        params: { path: { key } },
        body: { value },
        ...this.mb.init(options),
      }),
    );
  }

  /** Every current key, sorted. */
  all(options: RequestOptions = {}): Paged<CoreFact> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/core-facts", { params: { query: { cursor } }, ...this.mb.init(options) }),
      ),
    );
  }

  /** Every value `key` was set to, oldest first (every page). */
  history(
    key: string,
    options?: RequestOptions,
  ): Promise<ItemOf<ResultOf<"/v1/core-facts/{key}/history", "get">>[]> {
    return this.mb
      .paged((cursor) =>
        this.mb.call(
          this.mb.api.GET("/v1/core-facts/{key}/history", {
            params: { path: { key }, query: { cursor } },
            ...this.mb.init(options),
          }),
        ),
      )
      .all();
  }

  async delete(key: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/core-facts/{key}", { params: { path: { key } }, ...this.mb.init(options) }),
    );
  }
}

export class Documents extends Resource {
  add(
    content: string,
    options: Options<Omit<BodyOf<"/v1/documents", "post">, "content">> = {},
  ): Promise<Document> {
    return this.mb.call(
      this.mb.api.POST("/v1/documents", {
        body: { content, ...wire({ agentId: this.mb.agentId, ...options }) },
        ...this.mb.init(options),
      }),
    );
  }

  get(documentId: string, options?: RequestOptions): Promise<Document> {
    return this.mb.call(
      this.mb.api.GET("/v1/documents/{document_id}", {
        params: { path: { document_id: documentId } },
        ...this.mb.init(options),
      }),
    );
  }

  list(options: Options<QueryOf<"/v1/documents", "get">> = {}): Paged<Document> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/documents", {
          params: { query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  async delete(documentId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/documents/{document_id}", {
        params: { path: { document_id: documentId } },
        ...this.mb.init(options),
      }),
    );
  }
}

export class Summaries extends Resource {
  add(
    content: string,
    // agentId may come from the client (its default agent), so it is optional here even
    // though the server requires one: a summary with neither is refused (422 invalid_input)
    options: Options<Partial<Omit<BodyOf<"/v1/summaries", "post">, "content">>> = {},
  ): Promise<Summary> {
    const body = { ...wire({ agentId: this.mb.agentId, ...options }), content };
    return this.mb.call(
      this.mb.api.POST("/v1/summaries", {
        body: body as WireBodyOf<"/v1/summaries", "post">,
        ...this.mb.init(options),
      }),
    );
  }

  /** An agent's summaries, oldest first. */
  list(
    // agentId may come from the client (its default agent), as for add: the server
    // requires one (422 invalid_input without)
    options: Options<Partial<QueryOf<"/v1/summaries", "get">>> = {},
  ): Paged<Summary> {
    const query = wire({ agentId: this.mb.agentId, ...options });
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/summaries", {
          params: { query: { ...query, agent_id: query.agent_id as string, cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }
}

/** One run's working memory: JSON values by key. */
export class Working extends Resource {
  constructor(
    mb: MemoryBank,
    readonly runId: string,
  ) {
    super(mb);
  }

  /** The value at `key`, `undefined` when none. */
  async get(key: string, options?: RequestOptions): Promise<unknown> {
    try {
      const data = await this.mb.call(
        this.mb.api.GET("/v1/runs/{run_id}/working/{key}", {
          params: { path: { run_id: this.runId, key } },
          ...this.mb.init(options),
        }),
      );
      return data.value;
    } catch (error) {
      if (error instanceof MemoryBankError && error.code === "not_found") return undefined;
      throw error;
    }
  }

  async set(key: string, value: unknown, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.PUT("/v1/runs/{run_id}/working/{key}", {
        params: { path: { run_id: this.runId, key } },
        body: { value },
        ...this.mb.init(options),
      }),
    );
  }

  /** Remove `key`; whether it was there. */
  async delete(key: string, options?: RequestOptions): Promise<boolean> {
    try {
      await this.mb.call(
        this.mb.api.DELETE("/v1/runs/{run_id}/working/{key}", {
          params: { path: { run_id: this.runId, key } },
          ...this.mb.init(options),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof MemoryBankError && error.code === "not_found") return false;
      throw error;
    }
  }

  /** Every key and value of the run. */
  items(options: RequestOptions = {}): Paged<{ key: string; value?: unknown }> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/runs/{run_id}/working", {
          params: { path: { run_id: this.runId }, query: { cursor, limit: 1000 } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  async clear(options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/runs/{run_id}/working", {
        params: { path: { run_id: this.runId } },
        ...this.mb.init(options),
      }),
    );
  }
}

export class Snapshots extends Resource {
  async save(runId: string, value: unknown, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.PUT("/v1/snapshots/{run_id}", {
        params: { path: { run_id: runId } },
        body: { value },
        ...this.mb.init(options),
      }),
    );
  }

  /** The run's snapshot, `undefined` when none. */
  async load(runId: string, options?: RequestOptions): Promise<unknown> {
    try {
      const data = await this.mb.call(
        this.mb.api.GET("/v1/snapshots/{run_id}", {
          params: { path: { run_id: runId } },
          ...this.mb.init(options),
        }),
      );
      return data.value;
    } catch (error) {
      if (error instanceof MemoryBankError && error.code === "not_found") return undefined;
      throw error;
    }
  }

  async delete(runId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/snapshots/{run_id}", {
        params: { path: { run_id: runId } },
        ...this.mb.init(options),
      }),
    );
  }
}

export class Sessions extends Resource {
  /** The session of a user on a channel (made on first use). */
  open(
    options: Options<Omit<BodyOf<"/v1/sessions", "post">, "agentId"> & { agentId?: string }>,
  ): Promise<Session> {
    return this.mb.call(
      this.mb.api.POST("/v1/sessions", {
        body: wire({ ...options, agentId: options.agentId ?? this.mb.agentId }) as never,
        ...this.mb.init(options),
      }),
    );
  }

  get(sessionId: string, options?: RequestOptions): Promise<Session> {
    return this.mb.call(
      this.mb.api.GET("/v1/sessions/{session_id}", {
        params: { path: { session_id: sessionId } },
        ...this.mb.init(options),
      }),
    );
  }

  list(options: Options<QueryOf<"/v1/sessions", "get">> = {}): Paged<Session> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/sessions", {
          params: { query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  update(
    sessionId: string,
    changes: Options<BodyOf<"/v1/sessions/{session_id}", "patch">>,
  ): Promise<Session> {
    return this.mb.call(
      this.mb.api.PATCH("/v1/sessions/{session_id}", {
        params: { path: { session_id: sessionId } },
        body: wire(changes),
        ...this.mb.init(changes),
      }),
    );
  }

  async delete(sessionId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/sessions/{session_id}", {
        params: { path: { session_id: sessionId } },
        ...this.mb.init(options),
      }),
    );
  }
}

/** The knowledge graph: entities, relations, traversal. */
export class Graph extends Resource {
  addEntity(options: Options<BodyOf<"/v1/graph/entities", "post">>): Promise<Entity> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/entities", { body: wire(options) as never, ...this.mb.init(options) }),
    );
  }

  getEntity(entityId: string, options?: RequestOptions): Promise<Entity> {
    return this.mb.call(
      this.mb.api.GET("/v1/graph/entities/{entity_id}", {
        params: { path: { entity_id: entityId } },
        ...this.mb.init(options),
      }),
    );
  }

  entities(options: Options<QueryOf<"/v1/graph/entities", "get">> = {}): Paged<Entity> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/graph/entities", {
          params: { query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  async searchEntities(
    query: string,
    options: Options<Omit<QueryOf<"/v1/graph/entities/search", "get">, "query">> = {},
  ): Promise<Entity[]> {
    const data = await this.mb.call(
      this.mb.api.GET("/v1/graph/entities/search", {
        params: { query: { query, ...wire(options) } },
        ...this.mb.init(options),
      }),
    );
    return itemsOf(data);
  }

  updateEntity(
    entityId: string,
    changes: Options<BodyOf<"/v1/graph/entities/{entity_id}", "patch">>,
  ): Promise<Entity> {
    return this.mb.call(
      this.mb.api.PATCH("/v1/graph/entities/{entity_id}", {
        params: { path: { entity_id: entityId } },
        body: wire(changes),
        ...this.mb.init(changes),
      }),
    );
  }

  async deleteEntity(entityId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/graph/entities/{entity_id}", {
        params: { path: { entity_id: entityId } },
        ...this.mb.init(options),
      }),
    );
  }

  addObservations(entityId: string, observations: string[], options?: RequestOptions): Promise<Entity> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/entities/{entity_id}/observations", {
        params: { path: { entity_id: entityId } },
        body: { observations },
        ...this.mb.init(options),
      }),
    );
  }

  deleteObservations(entityId: string, observations: string[], options?: RequestOptions): Promise<Entity> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/entities/{entity_id}/observations/delete", {
        params: { path: { entity_id: entityId } },
        body: { observations },
        ...this.mb.init(options),
      }),
    );
  }

  merge(
    entityId: string,
    options: Options<BodyOf<"/v1/graph/entities/{entity_id}/merge", "post">>,
  ): Promise<Entity> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/entities/{entity_id}/merge", {
        params: { path: { entity_id: entityId } },
        body: wire(options) as never,
        ...this.mb.init(options),
      }),
    );
  }

  relations(
    entityId: string,
    options: Options<QueryOf<"/v1/graph/entities/{entity_id}/relations", "get">> = {},
  ): Paged<Relation> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/graph/entities/{entity_id}/relations", {
          params: { path: { entity_id: entityId }, query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  neighbors(
    entityId: string,
    options: Options<QueryOf<"/v1/graph/entities/{entity_id}/neighbors", "get">> = {},
  ): Paged<Entity> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/graph/entities/{entity_id}/neighbors", {
          params: { path: { entity_id: entityId }, query: { ...wire(options), cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  addRelation(options: Options<BodyOf<"/v1/graph/relations", "post">>): Promise<Relation> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/relations", { body: wire(options) as never, ...this.mb.init(options) }),
    );
  }

  getRelation(relationId: string, options?: RequestOptions): Promise<Relation> {
    return this.mb.call(
      this.mb.api.GET("/v1/graph/relations/{relation_id}", {
        params: { path: { relation_id: relationId } },
        ...this.mb.init(options),
      }),
    );
  }

  updateRelation(
    relationId: string,
    changes: Options<BodyOf<"/v1/graph/relations/{relation_id}", "patch">>,
  ): Promise<Relation> {
    return this.mb.call(
      this.mb.api.PATCH("/v1/graph/relations/{relation_id}", {
        params: { path: { relation_id: relationId } },
        body: wire(changes),
        ...this.mb.init(changes),
      }),
    );
  }

  invalidateRelation(
    relationId: string,
    options: Options<BodyOf<"/v1/graph/relations/{relation_id}/invalidate", "post">> = {},
  ): Promise<Relation> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/relations/{relation_id}/invalidate", {
        params: { path: { relation_id: relationId } },
        body: wire(options),
        ...this.mb.init(options),
      }),
    );
  }

  async deleteRelation(relationId: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/v1/graph/relations/{relation_id}", {
        params: { path: { relation_id: relationId } },
        ...this.mb.init(options),
      }),
    );
  }

  traverse(
    options: Options<BodyOf<"/v1/graph/traverse", "post">>,
  ): Promise<ResultOf<"/v1/graph/traverse", "post">> {
    return this.mb.call(
      this.mb.api.POST("/v1/graph/traverse", { body: wire(options) as never, ...this.mb.init(options) }),
    );
  }

  /** The shortest path between two entities (`null` when none). */
  path(
    sourceId: string,
    targetId: string,
    options: Options<Omit<QueryOf<"/v1/graph/path", "get">, "sourceId" | "targetId">> = {},
  ): Promise<ResultOf<"/v1/graph/path", "get">> {
    return this.mb.call(
      this.mb.api.GET("/v1/graph/path", {
        params: { query: { source_id: sourceId, target_id: targetId, ...wire(options) } },
        ...this.mb.init(options),
      }),
    );
  }

  stats(
    options: Options<QueryOf<"/v1/graph/stats", "get">> = {},
  ): Promise<ResultOf<"/v1/graph/stats", "get">> {
    return this.mb.call(
      this.mb.api.GET("/v1/graph/stats", { params: { query: wire(options) }, ...this.mb.init(options) }),
    );
  }

  async infer(options: Options<BodyOf<"/v1/graph/infer", "post">> = {}): Promise<Relation[]> {
    const data = await this.mb.call(
      this.mb.api.POST("/v1/graph/infer", { body: wire(options) as never, ...this.mb.init(options) }),
    );
    return itemsOf(data);
  }

  /** Delete the caller's whole graph; how many records were deleted. */
  async clear(options: Options<QueryOf<"/v1/graph", "delete">> = {}): Promise<number> {
    const data = await this.mb.call(
      this.mb.api.DELETE("/v1/graph", { params: { query: wire(options) }, ...this.mb.init(options) }),
    );
    return data.count;
  }
}

/** The reference service's routes: one conversation per agent name (and user). */
/** `client.consolidation`: consolidation runs, what each changed, and undo. */
export class Consolidation extends Resource {
  /** The runs the caller may see, newest first (each without its changes). */
  runs(options: RequestOptions = {}): Paged<ConsolidationReport> {
    return this.mb.paged((cursor) =>
      this.mb.call(
        this.mb.api.GET("/v1/consolidation/runs", {
          params: { query: { cursor } },
          ...this.mb.init(options),
        }),
      ),
    );
  }

  /** Every change of a run and why. */
  report(runId: string, options?: RequestOptions): Promise<ConsolidationReport> {
    return this.mb.call(
      this.mb.api.GET("/v1/consolidation/runs/{run_id}", {
        params: { path: { run_id: runId } },
        ...this.mb.init(options),
      }),
    );
  }

  /** Restore every fact and graph entity the run changed exactly as it was. */
  undo(runId: string, options?: RequestOptions): Promise<ConsolidationReport> {
    return this.mb.call(
      this.mb.api.POST("/v1/consolidation/runs/{run_id}/undo", {
        params: { path: { run_id: runId } },
        ...this.mb.init(options),
      }),
    );
  }
}

export class Cortex extends Resource {
  /** The newest `limit` messages of agent `name`, oldest first (`[]` before the first save). */
  async load(name: string, options: Options<{ limit?: number }> = {}): Promise<Message[]> {
    const data = await this.mb.call(
      this.mb.api.GET("/cortex/agents/{name}/memory", {
        params: { path: { name }, query: wire(options) },
        ...this.mb.init(options),
      }),
    );
    return data ?? [];
  }

  /** Append messages to agent `name`'s conversation, atomically. */
  async save(
    name: string,
    messages: MessageInput[],
    options: Options<{ idempotencyKey?: string }> = {},
  ): Promise<void> {
    const key = options.idempotencyKey ?? newKey();
    await this.mb.call(
      this.mb.api.POST("/cortex/agents/{name}/memory", {
        params: { path: { name } },
        body: { messages: messages.map((m) => wire(m)), idempotency_key: key } as never,
        ...this.mb.init(options),
      }),
    );
  }

  async clear(name: string, options?: RequestOptions): Promise<void> {
    await this.mb.call(
      this.mb.api.DELETE("/cortex/agents/{name}/memory", {
        params: { path: { name } },
        ...this.mb.init(options),
      }),
    );
  }
}
