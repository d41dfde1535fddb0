#!/usr/bin/env bash
# bench/metrics.sh - what the metrics cost: Tern with and without a
# metrics listener ([metrics] listen, tern serve --metrics), the same
# workloads, in alternating pairs.
#
# What: for each workload (hits: two names answered from the workers'
# response caches; misses: names that are never repeated, each an
# NXDOMAIN built from the zone; resolver-hits: the resolver's
# response-cache hits, local answers aside), REPS pairs of runs, metrics off then on, Tern
# pinned to CPU 0 with one worker and `tern perf` to CPU 1; per run the
# server's CPU time (the sum of its threads' schedstat run time) per
# answered query, and per pair the ratio on/off. The median ratio is
# the cost; issue 15's target is under 1.03.
#
# Why: the query path counts in per-worker counters published once per
# batch (internal/metrics); this is the number that says it stays cheap.
#
# Usage: bash bench/metrics.sh [QUICK=1]  (part of make bench)
# Output: bench/out/metrics.md (and metrics.tsv). Loopback only:
# 127.0.0.41 (authoritative), 127.0.0.42 (resolver) and 127.0.0.43 (the
# resolver's forward target), bench's block.

set -euo pipefail
{
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
for a in "$@"; do
	case $a in
	QUICK=* | DURATION=* | REPS=* | WORKLOADS=*) export "${a?}" ;;
	*) echo "usage: $0 [QUICK=1] [DURATION=s] [REPS=n] [WORKLOADS='hits misses resolver-hits']" >&2; exit 2 ;;
	esac
done
QUICK=${QUICK:-0}
[[ $QUICK == 0 || $QUICK == no || $QUICK == false ]] && QUICK=0 || QUICK=1
if ((QUICK)); then
	: "${DURATION:=2}" "${REPS:=3}"
else
	: "${DURATION:=4}" "${REPS:=5}"
fi
: "${WORKLOADS:=hits misses resolver-hits}"
OUT=${BENCH_OUT:-$REPO/bench/out}
mkdir -p "$OUT"
RUN=$(mktemp -d)
SRV_PID=
FWD_PID=
cleanup() {
	for p in $SRV_PID $FWD_PID; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$RUN"
}
trap cleanup EXIT

echo "metrics bench: building tern" >&2
(cd "$REPO" && go build -o "$RUN/tern" ./cmd/tern)
TERN=$RUN/tern
AUTH=127.0.0.41
RES=127.0.0.42
FWD=127.0.0.43
PORT=5341
MPORT=9341

printf 'www.example.com A\nmail.example.com AAAA\n' >"$RUN/hits.txt"
awk 'BEGIN { for (i = 0; i < 400000; i++) printf "nx%d.example.com A\n", i }' >"$RUN/misses.txt"
# The resolver's listener answers its server's own zones from their data,
# which its workers' response caches do not keep; a forward zone to
# another Tern (on CPU 1, asked only while the caches warm) makes every
# question a resolution once, then response-cache hits.
printf 'mail.fwd.test AAAA\nwww.fwd.test A\n' >"$RUN/resolver-hits.txt"
cat >"$RUN/fwd.test.zone" <<'EOF'
$ORIGIN fwd.test.
$TTL 86400
@    SOA ns1 hostmaster 1 7200 3600 1209600 86400
@    NS  ns1
ns1  A   127.0.0.43
www  A   192.0.2.1
mail AAAA 2001:db8::1
EOF

# cpu_ns PID: the process's CPU time so far, in nanoseconds (the sum of
# its threads' run time, /proc/PID/task/*/schedstat).
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'
}

# start MODE WORKLOAD: tern serve, with metrics when MODE is on.
start() {
	local mode=$1 w=$2 args=(serve --workers 1 --listen "$AUTH:$PORT" --zone "example.com=$REPO/examples/example.com.zone")
	[[ $mode == on ]] && args+=(--metrics "$AUTH:$MPORT")
	if [[ $w == resolver-* ]]; then
		cat >"$RUN/res.toml" <<EOF
[server]
listen = ["$AUTH:$PORT"]
workers = 1
control = ""
[resolver]
listen = ["$RES:$PORT"]
query-loopback = true
validation = false
[[resolver.forward]]
name = "fwd.test"
servers = ["$FWD:$PORT"]
[[zone]]
origin = "example.com"
file = "$REPO/examples/example.com.zone"
EOF
		args=(serve -c "$RUN/res.toml")
		if [[ -z $FWD_PID ]]; then
			taskset -c 1 "$TERN" serve --workers 1 --listen "$FWD:$PORT" --zone "fwd.test=$RUN/fwd.test.zone" >/dev/null 2>"$RUN/fwd.err" &
			FWD_PID=$!
		fi
		[[ $mode == on ]] && args+=(--metrics "$AUTH:$MPORT")
	fi
	: >"$RUN/serve.out"
	taskset -c 0 "$TERN" "${args[@]}" >"$RUN/serve.out" 2>"$RUN/serve.err" &
	SRV_PID=$!
	for _ in $(seq 100); do
		grep -q 'tern: serving' "$RUN/serve.out" && { [[ $w != resolver-* ]] || grep -q 'tern: resolving' "$RUN/serve.out"; } && return 0
		sleep 0.1
	done
	echo "tern serve did not start:" >&2
	cat "$RUN/serve.err" >&2
	exit 1
}

stop() {
	kill "$SRV_PID" 2>/dev/null || true
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=
}

# one MODE WORKLOAD: prints CPU us per answer and QPS.
one() {
	local mode=$1 w=$2 target=$AUTH
	[[ $w == resolver-* ]] && target=$RES
	start "$mode" "$w"
	# Warm the response caches (and the resolver's resolutions).
	taskset -c 1 "$TERN" perf -s "$target" -p "$PORT" -d "$RUN/$w.txt" -l 0.5 -progress off -j >/dev/null
	local before after json
	before=$(cpu_ns "$SRV_PID")
	json=$(taskset -c 1 "$TERN" perf -s "$target" -p "$PORT" -d "$RUN/$w.txt" -l "$DURATION" -progress off -j)
	after=$(cpu_ns "$SRV_PID")
	if [[ $mode == on ]]; then
		local scraped
		scraped=$(curl -sf "http://$AUTH:$MPORT/metrics" || true)
		if ! grep -q '^tern_queries_total' <<<"$scraped"; then
			echo "metrics on, but /metrics counts no query" >&2
			exit 1
		fi
	fi
	stop
	jq -r --argjson cpu $((after - before)) '[(if .completed > 0 then $cpu / 1000 / .completed else 0 end), .qps] | @tsv' <<<"$json" >"$RUN/one.tsv"
}

printf 'workload\tpair\toff_us\ton_us\tratio\toff_qps\ton_qps\n' >"$OUT/metrics.tsv"
for w in $WORKLOADS; do
	for p in $(seq "$REPS"); do
		one off "$w"
		read -r off_us off_qps <"$RUN/one.tsv"
		one on "$w"
		read -r on_us on_qps <"$RUN/one.tsv"
		ratio=$(awk -v a="$on_us" -v b="$off_us" 'BEGIN { printf "%.4f", (b > 0 ? a / b : 0) }')
		printf '%s\t%d\t%.3f\t%.3f\t%s\t%.0f\t%.0f\n' "$w" "$p" "$off_us" "$on_us" "$ratio" "$off_qps" "$on_qps" | tee -a "$OUT/metrics.tsv" >&2
	done
done

{
	echo "# Metrics on vs off ($(date -u +%Y-%m-%dT%H:%MZ), $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg))"
	echo
	echo "Tern on CPU 0 (one worker), tern perf on CPU 1, ${DURATION}s runs, $REPS pairs per workload (off, then on)."
	echo "Server CPU microseconds per answer; the cost is the median of the pairs' on/off ratios (target < 1.03)."
	echo
	echo "| workload | pairs | off us/answer (median) | on us/answer (median) | on/off (median of pairs) | ratios |"
	echo "|---|---|---|---|---|---|"
	awk -F'\t' 'NR > 1 { off[$1] = off[$1] " " $3; on[$1] = on[$1] " " $4; r[$1] = r[$1] " " $5; n[$1]++ }
	function median(s,   a, k, i, j, t) {
		k = split(s, a, " ")
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END { for (w in n) printf "| %s | %d | %.3f | %.3f | %.4f | %s |\n", w, n[w], median(off[w]), median(on[w]), median(r[w]), r[w] }' "$OUT/metrics.tsv"
} >"$OUT/metrics.md"
cat "$OUT/metrics.md"
}
