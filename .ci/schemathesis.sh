#!/usr/bin/env bash
# Fuzz the live API with schemathesis, the server started the way users start it (./engram run on
# its embedded defaults), with an admin key and a read-only key. Fails on any 5xx response or any
# mismatch between a response and the OpenAPI schema. About five minutes.
#   .ci/schemathesis.sh [SECONDS]     time budget of the main (admin key) phase, default 180
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.local/bin:$PATH"
budget="${1:-180}"
port=$(uv run --frozen --no-sync python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
base="http://127.0.0.1:$port"
log="$(mktemp /tmp/engram-schemathesis-XXXXXX.log)"

# The fuzzer sends thousands of requests a minute from one key; the server's limits stay on.
export ENGRAM_PORT="$port" API_THROTTLE_READ="100000/minute" API_THROTTLE_WRITE="100000/minute"
./engram run >"$log" 2>&1 &
launcher=$!
stop() {
  kill -INT "$launcher" 2>/dev/null || true
  wait "$launcher" 2>/dev/null || true
}
trap stop EXIT

for _ in $(seq 120); do
  curl -sf "$base/readyz" >/dev/null && break
  kill -0 "$launcher" 2>/dev/null || { echo "engram run exited:"; tail -50 "$log"; exit 1; }
  sleep 2
done
curl -sf "$base/readyz" >/dev/null || { echo "not ready after 240 s:"; tail -50 "$log"; exit 1; }

key() { ./engram manage create_agent --account schemathesis --create-account --name fuzzer --scopes "$1" | tail -n 1; }
admin_key=$(key admin)
read_key=$(key read)
throwaway=$(key read)
export ST_REVOKE_PREFIX=$(echo "$throwaway" | cut -d_ -f2)
api() { curl -sf -H "Authorization: Bearer $admin_key" -H "Content-Type: application/json" "$@"; }

# Something for searches to find; the stateful phase creates its own objects and follows the
# schema's links from them.
kb=$(api -X POST "$base/api/v1/rag/knowledge-bases" -d "{\"name\": \"fuzz-$port\"}")
kb_id=$(echo "$kb" | uv run --frozen --no-sync python -c "import json, sys; print(json.load(sys.stdin)['id'])")
api -X POST "$base/api/v1/rag/knowledge-bases/$kb_id/documents" \
  -d '{"title": "Fuzzing", "text": "# Fuzzing\n\nSchemathesis sends generated requests."}' >/dev/null

# Hypothesis's guard against cpython#106905 (see the hooks file).
export SCHEMATHESIS_HOOKS="$PWD/.ci/schemathesis_hooks.py"
# Every check runs by default. `--checks all` is not passed: it enables each check explicitly at
# the top, which overrides the per-operation settings of .ci/schemathesis.toml (a stateful
# ensure_resource_availability on `POST /skills/usage` failed CI that way).
st() {
  uv run --frozen --no-sync schemathesis --config-file .ci/schemathesis.toml run \
    "$base/api/schema/" --wait-for-schema 30 \
    --exclude-checks positive_data_acceptance,object_level_authorization "$@"
}
# A phase fails on any failed check. When schemathesis itself errs while generating data and no
# check failed (Hypothesis can trip over CPython 3.11's AST recursion tracking, cpython#106905),
# the phase runs once more with a new seed; a second error fails it.
phase() {
  local out
  out="$(mktemp /tmp/engram-schemathesis-phase-XXXXXX.log)"
  for attempt in 1 2; do
    if st "$@" 2>&1 | tee "$out"; then return 0; fi
    if grep -q "^Failures:" "$out" || ! grep -q "^Errors:" "$out" || [ "$attempt" = 2 ]; then
      return 1
    fi
    echo "== schemathesis erred without a failed check; running the phase again"
  done
}
status=0
echo "== schemathesis: admin key, every operation but revocation (${budget} s)"
phase -H "Authorization: Bearer $admin_key" --max-time "$budget" \
  --exclude-name-regex '/revoke$' || status=1
echo "== schemathesis: read-only key (45 s)"
phase -H "Authorization: Bearer $read_key" --max-time 45 || status=1
echo "== schemathesis: revocation of a throwaway key, last (30 s)"
phase -H "Authorization: Bearer $admin_key" --max-time 30 --phases coverage,fuzzing \
  --include-name-regex '/revoke$' || status=1
exit "$status"
