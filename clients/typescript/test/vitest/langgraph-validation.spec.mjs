// Every spec of @langchain/langgraph-checkpoint-validation against MemorybankSaver (vitest:
// the package's specs are vitest suites): `validate` (the default suite) and the opt-in
// `deltaChannelHistoryTests` (the ancestor walk DeltaChannel state is rebuilt by). Run by
// test/langgraph.test.mjs.
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import initializer from "../langgraph-initializer.mjs";

validate(initializer);
deltaChannelHistoryTests(initializer);
