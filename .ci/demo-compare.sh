#!/usr/bin/env bash
# Compares the newest run of experiments/cpu-demo.yaml in RESULTS_DIR with the committed
# baseline, without a gate, and says what the comparison can and cannot mean. make demo ends
# with it.
#
#   .ci/demo-compare.sh RUNNER_BIN RESULTS_DIR
set -euo pipefail
bin=$1
results=$2
baseline="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/results/cpu-demo/baseline"
new=$(find "$results/cpu-demo" -mindepth 1 -maxdepth 1 -type d ! -name baseline 2>/dev/null | sort | tail -n 1 || true)
if [ -z "$new" ]; then
	echo "demo: no run of cpu-demo in $results/cpu-demo to compare" >&2
	exit 1
fi
read -r load1 _ </proc/loadavg
cores=$(nproc)
field() { sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$baseline/manifest.json" | head -n 1; }
echo
echo "== this run against results/cpu-demo/baseline (no gate: for reading only)"
"$bin" diff "$baseline" "$new"
cat <<MSG

What this comparison means: the baseline ran on an idle $(field cpus)-core machine ($(field cpu)),
with nothing else running. On a CPU engine every TTFT and TPOT grows with whatever else the
machine runs: other processes on the same cores can make them several times longer. So "~"
says this machine, now, measures like that one; a significant change says how this machine and
what it is running differ from the baseline's, not that the runner or the engine changed. The
load average over the last minute was $load1 on $cores cores$(awk -v l="$load1" -v c="$cores" 'BEGIN { if (l > c) printf ": more work than cores, so expect slower figures" }').
MSG
