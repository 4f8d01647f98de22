import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/core.ts", "src/openai-agents.ts", "src/langgraph.ts", "src/ai-sdk.ts"],
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "es2022",
  platform: "neutral",
  external: ["openapi-fetch", "@openai/agents", "@openai/agents-core", "@langchain/langgraph-checkpoint", "@langchain/core", "ai"],
});
