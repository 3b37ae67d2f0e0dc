#!/usr/bin/env bash
# End-to-end check of the real CPU engine: builds (or finds) the pinned ollama, generates the
# tiny random model, serves it on a free loopback port, and streams /v1/completions and
# /v1/chat/completions with max_tokens 64. It fails unless both streams arrive as many text
# events and the final usage says exactly 64 completion tokens (the model never stops early).
#
#   .ci/ollama-smoke.sh [OUT_DIR]
#
# OUT_DIR (default: a new temporary folder) receives the raw streams with client arrival
# times (*.sse, *.times), the server log, the process tree and a summary (smoke.json).
# $RUNNER_OLLAMA picks the binary; otherwise PATH, then .ci/build-ollama.sh.
# Needs curl and python3. Whatever happens, the whole process group of the server (ollama
# starts a runner subprocess per loaded model) is killed on exit.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$(mktemp -d -t ollama-smoke.XXXXXX)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d -t ollama-smoke-work.XXXXXX)"

ollama="${RUNNER_OLLAMA:-}"
if [ -z "$ollama" ]; then
	ollama="$(command -v ollama || true)"
fi
if [ -z "$ollama" ]; then
	ollama="$("$root/.ci/build-ollama.sh")"
fi
echo "smoke: ollama binary $ollama" >&2

(cd "$root" && go build -o "$work/runner" ./runner)
"$work/runner" tinymodel "$work/tiny.gguf" >&2
printf 'FROM %s\n' "$work/tiny.gguf" >"$work/Modelfile"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
host="127.0.0.1:$port"
base="http://$host"

pgid=""
cleanup() {
	if [ -n "$pgid" ]; then
		kill -TERM -- "-$pgid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 -- "-$pgid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$pgid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

ms() { date +%s%3N; }

t_start=$(ms)
# setsid makes the server the leader of a new process group, so one signal reaches the
# runner subprocesses it spawns as well.
OLLAMA_HOST="$host" OLLAMA_MODELS="$work/models" OLLAMA_KEEP_ALIVE=-1 \
	setsid "$ollama" serve >"$out/serve.log" 2>&1 &
pgid=$!
ready=""
for _ in $(seq 300); do
	if curl -sf "$base/api/version" >"$out/version.json" 2>/dev/null; then
		ready=1
		break
	fi
	sleep 0.05
done
if [ -z "$ready" ]; then
	echo "smoke: ollama did not answer /api/version within 15s; log:" >&2
	tail -20 "$out/serve.log" >&2
	exit 1
fi
t_ready=$(ms)

OLLAMA_HOST="$host" "$ollama" create tiny -f "$work/Modelfile" >"$out/create.log" 2>&1
t_created=$(ms)

# An empty prompt loads the model and generates nothing; keep_alive -1 keeps it loaded.
curl -sf "$base/api/generate" -d '{"model":"tiny","prompt":"","keep_alive":-1}' >"$out/preload.json"
t_loaded=$(ms)

ps -o pid,ppid,pgid,args -g "$pgid" >"$out/process-tree.txt" || true

status=0
python3 - "$base" "$out" <<'PY' || status=$?
import json, sys, time, urllib.request

base, out = sys.argv[1], sys.argv[2]
MAX = 64
# Fields other engines know; ollama's OpenAI layer is expected to ignore the unknown ones.
extra = {
    "temperature": 0.8, "seed": 7, "ignore_eos": True, "min_tokens": MAX,
    "return_token_ids": True,
    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
}

def stream(name, path, body):
    body = dict(body, model="tiny", max_tokens=MAX, stream=True, **extra)
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    times, lines = [], []
    with urllib.request.urlopen(req) as resp:
        status = resp.status
        ctype = resp.headers.get("Content-Type")
        for raw in resp:
            times.append(time.monotonic() - t0)
            lines.append(raw.decode())
    end = time.monotonic() - t0
    with open(f"{out}/{name}.sse", "w") as f:
        f.write("".join(lines))
    text_times, usage, finish, ids, roles, zero_usage = [], None, None, set(), 0, 0
    for t, line in zip(times, lines):
        if not line.startswith("data: ") or line.strip() == "data: [DONE]":
            continue
        c = json.loads(line[6:])
        ids.add(c.get("id"))
        if not c["choices"]:
            usage = c.get("usage")
            continue
        if c.get("usage") == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}:
            zero_usage += 1
        ch = c["choices"][0]
        delta = ch.get("delta") or {}
        if "role" in delta:
            roles += 1
        txt = ch.get("text") if "text" in ch else delta.get("content")
        if txt:
            text_times.append(t)
        finish = ch.get("finish_reason") or finish
    with open(f"{out}/{name}.times", "w") as f:
        f.write("".join(f"{t:.6f}\n" for t in times))
    n = len(text_times)
    s = {
        "endpoint": path, "status": status, "content_type": ctype,
        "text_events": n, "usage": usage, "finish_reason": finish,
        "chunk_ids": sorted(i for i in ids if i), "chunks_with_role": roles,
        "chunks_with_zeroed_usage": zero_usage,
        "ttft_s": round(text_times[0], 4) if n else None, "e2e_s": round(end, 4),
        "events_per_s_after_first": round((n - 1) / (text_times[-1] - text_times[0]), 1) if n > 1 else None,
    }
    print(json.dumps(s), file=sys.stderr)
    ok = usage is not None and usage.get("completion_tokens") == MAX and n >= MAX // 2 and finish == "length"
    return s, ok

results, good = [], True
for name, path, body in [
    ("completions", "/v1/completions", {"prompt": "the cat sat on the mat and the dog"}),
    ("chat", "/v1/chat/completions", {"messages": [{"role": "user", "content": "the cat sat on the mat and the dog"}]}),
]:
    s, ok = stream(name, path, body)
    results.append(s)
    good = good and ok
json.dump(results, open(f"{out}/streams.json", "w"), indent=1)
sys.exit(0 if good else 1)
PY

cat >"$out/smoke.json" <<EOF
{"ollama": "$ollama", "version": $(cat "$out/version.json"), "boot_ms": $((t_ready - t_start)), "create_ms": $((t_created - t_ready)), "load_ms": $((t_loaded - t_created)), "streams": $(cat "$out/streams.json")}
EOF
cat "$out/smoke.json"
echo "smoke: results in $out" >&2
exit "$status"
