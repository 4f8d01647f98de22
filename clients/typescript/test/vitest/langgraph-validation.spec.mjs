// Every spec of @langchain/langgraph-checkpoint-validation against MemorybankSaver (vitest:
// the package's specs are vitest suites). Run by test/langgraph.test.mjs.
import { validate } from "@langchain/langgraph-checkpoint-validation";
import initializer from "../langgraph-initializer.mjs";

validate(initializer);
