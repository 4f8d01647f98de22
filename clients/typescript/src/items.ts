/**
 * OpenAI Agents JS items <-> Responses API items, the shape the Python SDK (and so the
 * Python `MemorybankSession`) stores: `callId` <-> `call_id`, `function_call_result` <->
 * `function_call_output`, reasoning `content` <-> `summary`, and `providerData` spread
 * into the item (as the JS SDK sends it to the Responses API) and gathered back.
 *
 * Round trips: a JS item converted and converted back is the same item; a Responses
 * item (from Python) converted to JS and back is the same dict. A function result's
 * `name` is not part of a Responses item: it is read back from the call it answers.
 */

type Json = Record<string, unknown>;

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The item's fields with `providerData` spread in (its keys snake_cased). */
function spread(base: Json, providerData: unknown): Json {
  const out: Json = {};
  if (isRecord(providerData)) for (const [k, v] of Object.entries(providerData)) out[snake(k)] = v;
  for (const [k, v] of Object.entries(base)) if (v !== undefined) out[k] = v;
  return out;
}

/** `known` fields of `item` renamed by `names`, every other field into `providerData`. */
function gather(item: Json, known: Record<string, string>): Json {
  const out: Json = {};
  const providerData: Json = {};
  for (const [k, v] of Object.entries(item)) {
    const name = known[k];
    if (name !== undefined) out[name] = v;
    else providerData[camel(k)] = v;
  }
  if (Object.keys(providerData).length > 0) out.providerData = providerData;
  return out;
}

function partToResponses(part: unknown): unknown {
  if (!isRecord(part)) return part;
  const { providerData, ...rest } = part;
  if (rest.type === "input_image" && "image" in rest) {
    const { image, ...others } = rest;
    const where = isRecord(image) ? { file_id: image.id } : { image_url: image };
    return spread({ ...others, ...where }, providerData);
  }
  return spread(rest, providerData);
}

const PART_KEYS: Record<string, Record<string, string>> = {
  input_text: { type: "type", text: "text" },
  output_text: { type: "type", text: "text" },
  refusal: { type: "type", refusal: "refusal" },
  input_image: { type: "type", detail: "detail" },
};

function partFromResponses(part: unknown): unknown {
  if (!isRecord(part) || typeof part.type !== "string") return part;
  const keys = PART_KEYS[part.type];
  if (keys === undefined) return part;
  const out = gather(part, { ...keys, image_url: "image", file_id: "image" });
  if (part.type === "input_image" && typeof part.file_id === "string") out.image = { id: part.file_id };
  return out;
}

const MESSAGE_KEYS = { type: "type", id: "id", role: "role", content: "content", status: "status" };
const CALL_KEYS = {
  type: "type",
  id: "id",
  call_id: "callId",
  name: "name",
  namespace: "namespace",
  status: "status",
  arguments: "arguments",
};

function outputToResponses(output: unknown): unknown {
  if (typeof output === "string") return output;
  if (isRecord(output) && output.type === "text" && typeof output.text === "string") return output.text;
  if (Array.isArray(output)) return output.map(partToResponses);
  return output;
}

function outputFromResponses(output: unknown): unknown {
  if (typeof output === "string") return { type: "text", text: output };
  if (Array.isArray(output)) return output.map(partFromResponses);
  return output;
}

/** A JS SDK item as the Responses API item the Python SDK would store. */
export function toResponsesItem(item: Json): Json {
  const { providerData, ...rest } = item;
  if (typeof rest.role === "string" && (rest.type === undefined || rest.type === "message")) {
    const content = Array.isArray(rest.content) ? rest.content.map(partToResponses) : rest.content;
    return spread({ ...rest, content }, providerData);
  }
  switch (rest.type) {
    case "function_call": {
      const { callId, ...others } = rest;
      return spread({ ...others, call_id: callId }, providerData);
    }
    case "function_call_result": {
      const { callId, name: _name, output, type: _type, ...others } = rest;
      return spread(
        { type: "function_call_output", ...others, call_id: callId, output: outputToResponses(output) },
        providerData,
      );
    }
    case "reasoning": {
      const { content, ...others } = rest;
      const summary = Array.isArray(content)
        ? content.map((c) => (isRecord(c) ? { ...c, type: "summary_text" } : c))
        : content;
      return spread({ ...others, summary }, providerData);
    }
    default: {
      const out: Json = {};
      for (const [k, v] of Object.entries(rest)) out[snake(k)] = v;
      return spread(out, providerData);
    }
  }
}

/**
 * A stored Responses item (or chat message) as a JS SDK item. `callNames` maps call ids
 * to the names of their calls (for `function_call_result.name`).
 */
export function fromResponsesItem(item: Json, callNames: Map<string, string> = new Map()): Json {
  if (typeof item.role === "string" && (item.type === undefined || item.type === "message")) {
    if (!Array.isArray(item.content) && Object.keys(item).every((k) => k in MESSAGE_KEYS)) return { ...item };
    const out = gather(item, MESSAGE_KEYS);
    if (Array.isArray(item.content)) out.content = item.content.map(partFromResponses);
    return out;
  }
  switch (item.type) {
    case "function_call":
      return gather(item, CALL_KEYS);
    case "function_call_output": {
      const { type: _type, ...rest } = item;
      const out = gather(rest, { id: "id", call_id: "callId", status: "status", output: "output" });
      const callId = String(item.call_id);
      return {
        type: "function_call_result",
        ...out,
        name: callNames.get(callId) ?? callId,
        status: item.status ?? "completed",
        output: outputFromResponses(item.output),
      };
    }
    case "reasoning": {
      const out = gather(item, { type: "type", id: "id", summary: "content" });
      if (Array.isArray(item.summary)) {
        out.content = item.summary.map((s) => (isRecord(s) ? { ...s, type: "input_text" } : s));
      }
      return out;
    }
    default: {
      const out: Json = {};
      for (const [k, v] of Object.entries(item)) out[camel(k)] = v;
      return out;
    }
  }
}

/** The names of the `function_call` items among `items`, by call id. */
export function callNamesOf(items: Json[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const item of items) {
    if (item.type === "function_call" && typeof item.call_id === "string" && typeof item.name === "string") {
      names.set(item.call_id, item.name);
    }
  }
  return names;
}
