#!/usr/bin/env bash
# The memorybank service used from curl: a thread for one user, two messages, the history,
# a fact, a search and a context built for a model call, then an error as the API gives it.
#
#   memorybank keys create --url sqlite:///svc.db --tenant acme     # prints the key last
#   memorybank serve --url sqlite:///svc.db --port 8080 &
#   MEMORYBANK_BASE=http://127.0.0.1:8080 MEMORYBANK_API_KEY=mb_... examples/service_curl.sh
#
# Every request carries the tenant's key; X-User-Id scopes it to one end user, whose
# threads and facts no other user's requests can see.
set -euo pipefail

BASE="${MEMORYBANK_BASE:-http://127.0.0.1:8080}"
KEY="${MEMORYBANK_API_KEY:?set MEMORYBANK_API_KEY to a key from memorybank keys create}"

api() {  # api METHOD PATH [JSON]: one request as alice; prints the answer's body
  local method="$1" path="$2"
  shift 2
  curl --silent --show-error --fail-with-body -X "$method" "$BASE$path" \
    -H "Authorization: Bearer $KEY" -H "X-User-Id: alice" \
    -H "Content-Type: application/json" "$@"
  echo
}

echo "== a thread owned by alice"
api POST /v1/threads --data '{"thread_id": "support-42", "agent_id": "helper", "title": "Order"}'

echo "== two messages"
api POST /v1/threads/support-42/entries --data '{"role": "user", "content": "My order #1234 never arrived."}'
api POST /v1/threads/support-42/entries --data '{"role": "assistant", "content": "Sorry! Let me check order #1234."}'

echo "== the history, oldest first, as a model takes it"
api GET "/v1/threads/support-42/history?last=20"

echo "== a long-term fact about alice"
api POST /v1/facts --data '{"content": "Alice prefers email over phone", "agent_id": "helper"}'

echo "== search her memory"
api POST /v1/search --data '{"query": "order arrived", "mode": "keyword", "agent_id": "helper", "kinds": ["entries", "facts"]}'

echo "== the context for the next model call, within 500 tokens"
api POST /v1/threads/support-42/context --data '{"max_tokens": 500, "agent_id": "helper", "include_facts": true, "system_prompt": "You are a support agent."}'

echo "== bad input is a 422 that names the field"
curl --silent -X POST "$BASE/v1/threads/support-42/entries" \
  -H "Authorization: Bearer $KEY" -H "X-User-Id: alice" -H "Content-Type: application/json" \
  --data '{"role": "robot", "content": "hi"}' --write-out '\nstatus %{http_code}\n'
