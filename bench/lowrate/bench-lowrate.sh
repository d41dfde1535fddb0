#!/usr/bin/env bash
# bench/lowrate/bench-lowrate.sh - CPU per query at a fixed, moderate rate:
# Tern with one Go P, Tern as tern serve sets it (one P more than its UDP
# workers: cmd/tern/serve.go procsFloor), and NSD.
#
# Each server is pinned to CPU 0 with one worker and serves a small zone;
# dnsperf (on CPU 1, 8 clients) sends RATE queries a second for DURATION
# seconds (-Q), so every server does the same work and the figure is the
# CPU time of its process tree per query answered: what a server running
# well below its capacity costs, where bench/run.sh measures saturation.
#
# Usage: bash bench/lowrate/bench-lowrate.sh [RATE]   (10000)
# Environment: DURATION (5 s), REPS (2, interleaved), SERVERS
# ("tern1 tern nsd"), BENCH_PORT_BASE (25300: port +40), KEEP=1,
# TERN_BIN (a ready tern binary).
set -euo pipefail
export PATH="$PATH:/usr/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench/lib/servers.sh
source "$HERE/../lib/servers.sh"
RATE=${1:-10000}
DURATION=${DURATION:-5}
REPS=${REPS:-2}
SERVERS=${SERVERS:-tern1 tern nsd}
PORT=$((${BENCH_PORT_BASE:-25300} + 40))
bench_work lowrate
port_free "$PORT"
command -v dnsperf >/dev/null || { echo "dnsperf is needed (Debian: dnsperf)" >&2; exit 1; }

printf '$ORIGIN bench.test.\n$TTL 3600\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.2\n' >"$WORK/small.zone"
for _ in $(seq 1000); do echo "www.bench.test. A"; done >"$WORK/queries"
mkdir -p "$WORK/bin" "$WORK/nsd"
tern_binary "$WORK/bin/tern"
nsd_conf "$WORK/nsd" "$PORT" "bench.test.=$WORK/small.zone"

# launch SERVER: starts it on PORT; STARTED_PID.
launch() {
	local tern=("$WORK/bin/tern" serve --listen "127.0.0.1:$PORT" --zone "bench.test.=$WORK/small.zone" --workers 1 --log-level warn)
	case $1 in
	tern1) GOMAXPROCS=1 "${PIN[@]}" "${tern[@]}" >"$WORK/tern.log" 2>&1 & STARTED_PID=$! ;;
	tern) "${PIN[@]}" "${tern[@]}" >"$WORK/tern.log" 2>&1 & STARTED_PID=$! ;;
	nsd) nsd_run "$WORK/nsd" ;;
	esac
}

answered() { kdig @127.0.0.1 -p "$PORT" +short +timeout=1 +retry=0 www.bench.test. A 2>/dev/null | head -1; }

printf 'server\trep\trate\tqueries\tcpu_us_per_query\tlatency_ms\n' >"$WORK/raw.tsv"
for rep in $(seq "$REPS"); do
	for s in $SERVERS; do
		[ "$s" = nsd ] && ! command -v nsd >/dev/null && { echo "!!! nsd not installed" >&2; continue; }
		launch "$s"
		STARTED=$STARTED_PID
		track "$STARTED"
		if ! wait_for "$STARTED" 200 0.05 192.0.2.2 answered; then
			echo "!!! $s did not answer" >&2
			stop "$STARTED"
			continue
		fi
		a=$(cpu "$STARTED")
		"${OPIN[@]}" dnsperf -s 127.0.0.1 -p "$PORT" -d "$WORK/queries" -Q "$RATE" -l "$DURATION" -c 8 >"$WORK/$s.dnsperf" 2>&1 || true
		b=$(cpu "$STARTED")
		q=$(awk '/Queries completed:/ {print $3}' "$WORK/$s.dnsperf")
		lat=$(awk '/Average Latency/ {printf "%.3f", $4 * 1000}' "$WORK/$s.dnsperf")
		cpq=$(awk -v c=$((b - a)) -v k="$TCK" -v q="${q:-0}" 'BEGIN {if (q > 0) printf "%.1f", c / k / q * 1e6; else print "-"}')
		echo "  $s rep $rep: $q queries at $RATE/s, CPU $cpq us/query, latency $lat ms" >&2
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$rep" "$RATE" "${q:-}" "$cpq" "${lat:-}" >>"$WORK/raw.tsv"
		stop "$STARTED"
	done
done

echo
echo "CPU per query at $RATE queries/s, $DURATION s each, servers pinned to CPU 0 with one worker; load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "tern1 = tern serve with GOMAXPROCS=1; tern = as tern serve sets it ($TERN_REV)"
printf '%-6s %4s %10s %12s %11s\n' server rep queries "CPU us/q" "latency ms"
awk -F'\t' 'NR > 1 {printf "%-6s %4s %10s %12s %11s\n", $1, $2, $4, $5, $6}' "$WORK/raw.tsv"
