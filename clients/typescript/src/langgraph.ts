/**
 * LangGraph.js: a checkpointer on the memorybank service.
 *
 * ```ts
 * import { MemoryBank, MemorybankSaver } from "@memorybank/client";
 * const checkpointer = new MemorybankSaver(new MemoryBank({ baseUrl, apiKey }));
 * const graph = builder.compile({ checkpointer });
 * ```
 *
 * Layout: each LangGraph thread is one working-memory run `lg:<thread_id>` of the
 * caller's tenant (and user, with `withUser`): one key per checkpoint
 * (`cp|<ns>|<id>`: the checkpoint without its channel values, and its metadata,
 * serialized by the saver's `serde`, base64), one per channel value and version
 * (`b|<ns>|<channel>|<version>`, written only for the channels `put` is told changed in
 * `newVersions`, so an unchanged channel is stored once and a checkpoint reads it back
 * through its `channel_versions`) and one per pending write (`w|<ns>|<id>|<task>|<idx>`);
 * the run `lg:threads` lists the threads (for `list()` without a thread). A checkpoint
 * older than format v4 is read with its parent's pending sends moved into its `__pregel_tasks`
 * channel, as LangGraph's own savers do. The Python `MemorybankSaver` keeps
 * its checkpoints as records with LangGraph's msgpack serde, which the REST API does not
 * expose: the two savers share the tenant and user scoping, not their checkpoints.
 */

import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import type { MemoryBank } from "./client.js";

const THREADS = "lg:threads";
const SEP = "|";

interface StoredCheckpoint {
  type: string;
  checkpoint: string;
  metadataType: string;
  metadata: string;
  parent: string | null;
}

interface StoredBlob {
  type: string;
  value: string;
}

interface StoredWrite {
  taskId: string;
  taskPath: string;
  idx: number;
  channel: string;
  type: string;
  value: string;
}

function b64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function unb64(text: string): Uint8Array {
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

const enc = encodeURIComponent;

const writePrefix = (ns: string, id: string) => ["w", enc(ns), enc(id), ""].join(SEP);
const blobKey = (ns: string, channel: string, version: unknown) =>
  ["b", enc(ns), enc(channel), enc(String(version))].join(SEP);

/** A LangGraph checkpointer storing in a memorybank tenant's working memory. */
export class MemorybankSaver extends BaseCheckpointSaver {
  private readonly mb: MemoryBank;

  constructor(client: MemoryBank, serde?: SerializerProtocol) {
    super(serde);
    this.mb = client;
  }

  private run(threadId: string) {
    return this.mb.working(`lg:${threadId}`);
  }

  private async entries(threadId: string): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for await (const item of this.run(threadId).items()) out.set(item.key, item.value);
    return out;
  }

  /** The stored pending writes of one checkpoint, in LangGraph's writes order. */
  private writesOf(ns: string, id: string, all: Map<string, unknown>): StoredWrite[] {
    const prefix = writePrefix(ns, id);
    const writes: StoredWrite[] = [];
    for (const [key, value] of all) if (key.startsWith(prefix)) writes.push(value as StoredWrite);
    return writes.sort((a, b) =>
      compareWritesSortKeys(
        writesSortKey(a.taskPath, a.taskId, a.idx),
        writesSortKey(b.taskPath, b.taskId, b.idx),
      ),
    );
  }

  private async tuple(
    threadId: string,
    ns: string,
    id: string,
    stored: StoredCheckpoint,
    all: Map<string, unknown>,
  ): Promise<CheckpointTuple> {
    const checkpoint = (await this.serde.loadsTyped(stored.type, unb64(stored.checkpoint))) as Checkpoint;
    const metadata = (await this.serde.loadsTyped(
      stored.metadataType,
      unb64(stored.metadata),
    )) as CheckpointMetadata;
    const values: Record<string, unknown> = { ...(checkpoint.channel_values ?? {}) };
    for (const [channel, version] of Object.entries(checkpoint.channel_versions ?? {})) {
      const blob = all.get(blobKey(ns, channel, version)) as StoredBlob | undefined;
      if (blob !== undefined) values[channel] = await this.serde.loadsTyped(blob.type, unb64(blob.value));
    }
    checkpoint.channel_values = values;
    if (checkpoint.v < 4 && stored.parent !== null) {
      // Before v4 a step's sends were pending writes of its parent: move them into the channel.
      const sends = this.writesOf(ns, stored.parent, all).filter((w) => w.channel === TASKS);
      values[TASKS] = await Promise.all(sends.map((w) => this.serde.loadsTyped(w.type, unb64(w.value))));
      const versions = Object.values(checkpoint.channel_versions ?? {});
      checkpoint.channel_versions = {
        ...checkpoint.channel_versions,
        [TASKS]: versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined),
      };
    }
    const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
      this.writesOf(ns, id, all).map(
        async (w) =>
          [
            w.taskId,
            w.channel,
            await this.serde.loadsTyped(w.type, unb64(w.value)),
          ] as CheckpointPendingWrite,
      ),
    );
    const out: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } },
      checkpoint,
      metadata,
      pendingWrites,
    };
    if (stored.parent !== null) {
      out.parentConfig = {
        configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: stored.parent },
      };
    }
    return out;
  }

  /** The checkpoints of a thread's entries, newest first: `[ns, id, stored]`. */
  private checkpointsOf(all: Map<string, unknown>): [string, string, StoredCheckpoint][] {
    const found: [string, string, StoredCheckpoint][] = [];
    for (const [key, value] of all) {
      const parts = key.split(SEP);
      if (parts[0] !== "cp" || parts.length !== 3) continue;
      found.push([
        decodeURIComponent(parts[1] ?? ""),
        decodeURIComponent(parts[2] ?? ""),
        value as StoredCheckpoint,
      ]);
    }
    return found.sort((a, b) => (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0));
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) return undefined;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const wanted = config.configurable?.checkpoint_id as string | undefined;
    const all = await this.entries(threadId);
    const match = this.checkpointsOf(all).find(
      ([n, id]) => n === ns && (wanted === undefined || id === wanted),
    );
    return match === undefined ? undefined : this.tuple(threadId, match[0], match[1], match[2], all);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    const given = config.configurable?.thread_id as string | undefined;
    const threads =
      given !== undefined ? [given] : (await this.mb.working(THREADS).items().all()).map((i) => i.key).sort();
    const ns = config.configurable?.checkpoint_ns as string | undefined;
    const id = config.configurable?.checkpoint_id as string | undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    let left = limit ?? Number.POSITIVE_INFINITY;
    for (const threadId of threads) {
      const all = await this.entries(threadId);
      for (const [n, cid, stored] of this.checkpointsOf(all)) {
        if (left <= 0) return;
        if (ns !== undefined && n !== ns) continue;
        if (id !== undefined && cid !== id) continue;
        if (beforeId !== undefined && cid >= beforeId) continue;
        const tuple = await this.tuple(threadId, n, cid, stored, all);
        if (
          filter &&
          !Object.entries(filter).every(([k, v]) =>
            deepEqual((tuple.metadata as Record<string, unknown>)?.[k], v),
          )
        ) {
          continue;
        }
        left--;
        yield tuple;
      }
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) throw new Error("put needs config.configurable.thread_id");
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const run = this.run(threadId);
    // Only the channels that changed are written, each once per version; the checkpoint
    // itself keeps no values (a channel unchanged since an ancestor is read from its blob).
    for (const [channel, version] of Object.entries(newVersions)) {
      if (!Object.hasOwn(checkpoint.channel_values, channel)) continue;
      const [blobType, blobBytes] = await this.serde.dumpsTyped(checkpoint.channel_values[channel]);
      const blob: StoredBlob = { type: blobType, value: b64(blobBytes) };
      await run.set(blobKey(ns, channel, version), blob);
    }
    const [type, bytes] = await this.serde.dumpsTyped({ ...checkpoint, channel_values: {} });
    const [metadataType, metadataBytes] = await this.serde.dumpsTyped(metadata);
    const stored: StoredCheckpoint = {
      type,
      checkpoint: b64(bytes),
      metadataType,
      metadata: b64(metadataBytes),
      parent: (config.configurable?.checkpoint_id as string | undefined) ?? null,
    };
    await this.mb.working(THREADS).set(threadId, true);
    await run.set(["cp", enc(ns), enc(checkpoint.id)].join(SEP), stored);
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = "",
  ): Promise<void> {
    const threadId = config.configurable?.thread_id as string | undefined;
    const id = config.configurable?.checkpoint_id as string | undefined;
    if (threadId === undefined || id === undefined) {
      throw new Error("putWrites needs config.configurable.thread_id and checkpoint_id");
    }
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const run = this.run(threadId);
    const existing = new Set((await run.items().all()).map((i) => i.key));
    for (const [i, [channel, value]] of writes.entries()) {
      const idx = WRITES_IDX_MAP[channel] ?? i;
      const key = ["w", enc(ns), enc(id), enc(taskId), String(idx)].join(SEP);
      if (idx >= 0 && existing.has(key)) continue; // a regular write is kept as first written
      const [type, bytes] = await this.serde.dumpsTyped(value);
      const stored: StoredWrite = { taskId, taskPath, idx, channel, type, value: b64(bytes) };
      await run.set(key, stored);
    }
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.run(threadId).clear();
    await this.mb.working(THREADS).delete(threadId);
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
