// The checkpoint validation package's initializer: one live server for the run, a fresh
// tenant (its own API key) for every checkpointer it creates, so instances never share state.
import { MemoryBank, MemorybankSaver } from "../dist/index.js";
import { serve } from "./harness.mjs";

let server;
let n = 0;

export default {
  checkpointerName: "@memorybank/client MemorybankSaver",
  beforeAllTimeout: 120_000,
  async beforeAll() {
    server = await serve(process.env.MEMORYBANK_TS_LANGGRAPH_STORE ?? "sqlite");
  },
  async afterAll() {
    await server?.stop();
  },
  async createCheckpointer() {
    n += 1;
    const apiKey = await server.key(`lg-validate-${n}`);
    return new MemorybankSaver(new MemoryBank({ baseUrl: server.baseUrl, apiKey }));
  },
};
