#!/usr/bin/env bash
# bench/manyzones/bench-manyzones.sh - many small zones: Tern beside Knot
# and NSD.
#
# N zones z0.test. .. z(N-1).test., each a file of four records (SOA, NS,
# ns1 A, www A: a hosting provider's zones), one [[zone]] / zone: entry
# each in every server's config. Per server:
#   load   the time from the server's start until it answers www of the
#          LAST zone with its address (Knot loads zones in the background
#          and answers at once; NSD and Tern load before answering), its
#          CPU time by then, and its memory after (PSS of its process
#          tree: NSD forks, and its children share the parent's pages);
#   qps    dnsperf (on CPU 1, 8 clients, -q 100) over www.zK.test. A
#          spread at random over all the zones, DURATION seconds: QPS,
#          lost, the share answered NOERROR, server CPU per query;
#   add    Tern only: one tern ctl zone-add with N zones served, wall time
#          (the cost of publishing one zone beside N).
# Servers are pinned to CPU 0 with one worker, as bench/run.sh runs them.
#
# Usage: bash bench/manyzones/bench-manyzones.sh [N]   (100000; make bench QUICK=1: 10000)
# Environment: DURATION (10 s; QUICK runs use 5), SERVERS ("tern knot nsd"),
# BENCH_PORT_BASE (25300: ports +30..+32), KEEP=1 (keep the work directory),
# TERN_BIN (a ready tern binary).
set -euo pipefail
export PATH="$PATH:/usr/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench/lib/servers.sh
source "$HERE/../lib/servers.sh"
N=${1:-100000}
DURATION=${DURATION:-10}
SERVERS=${SERVERS:-tern knot nsd}
PORT_BASE=${BENCH_PORT_BASE:-25300}
P_TERN=$((PORT_BASE + 30)) P_KNOT=$((PORT_BASE + 31)) P_NSD=$((PORT_BASE + 32))
bench_work manyzones

for p in $P_TERN $P_KNOT $P_NSD; do port_free "$p" || exit 1; done
for b in dnsperf kdig; do
	command -v $b >/dev/null || { echo "$b is needed (Debian: dnsperf, knot-dnsutils)" >&2; exit 1; }
done

echo "# many zones: $N zones of 4 records; work dir $WORK" >&2
mkdir -p "$WORK/zones"
# The zones, Tern's zone list, the list of ORIGIN=FILE that Knot's and
# NSD's configs are written from (bench/lib/servers.sh) and the queries,
# by awk (a shell loop over 100,000 zones forks too much).
awk -v n="$N" -v d="$WORK/zones" -v w="$WORK" 'BEGIN {
	for (i = 0; i < n; i++) {
		o = "z" i ".test."
		f = d "/" o "zone"
		printf "$ORIGIN %s\n$TTL 3600\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 10.%d.%d.%d\n", o, int(i / 65536), int(i / 256) % 256, i % 256 > f
		close(f)
		printf "[[zone]]\norigin = \"%s\"\nfile = \"%s\"\n", o, f > (w "/tern-zones.toml")
		printf "%s=%s\n", o, f > (w "/zones.list")
	}
	srand(1)
	for (q = 0; q < 200000; q++) printf "www.z%d.test. A\n", int(rand() * n) > (w "/queries")
}'
LAST="www.z$((N - 1)).test."
WANT="10.$(((N - 1) / 65536)).$((((N - 1) / 256) % 256)).$(((N - 1) % 256))"

mapfile -t ZONES <"$WORK/zones.list"
mkdir -p "$WORK/bin"
tern_binary "$WORK/bin/tern"

# pss PID: the PSS of PID's process tree in kB.
pss() {
	local p t=0
	for p in $(tree "$1"); do t=$((t + $(awk '$1 == "Pss:" {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0))); done
	echo "$t"
}

# answered PORT: the address served for the last zone's www, or nothing.
answered() { "${OPIN[@]}" kdig @127.0.0.1 -p "$1" +short +timeout=1 +retry=0 "$LAST" A 2>/dev/null | head -1; }

# prepare SERVER: its config in WORK/SERVER, written before the clock
# starts (it lists N zones); PORT: its port.
prepare() {
	mkdir -p "$WORK/$1"
	case $1 in
	tern)
		{
			printf '[server]\nlisten = ["127.0.0.1:%s"]\nworkers = 1\ncontrol = "%s"\ndata-dir = "%s"\n' "$P_TERN" "$WORK/tern/ctl.sock" "$WORK/tern/data"
			cat "$WORK/tern-zones.toml"
		} >"$WORK/tern/tern.toml"
		PORT=$P_TERN
		;;
	knot) knot_conf "$WORK/knot" "$P_KNOT" "${ZONES[@]}" && PORT=$P_KNOT ;;
	nsd) nsd_conf "$WORK/nsd" "$P_NSD" "${ZONES[@]}" && PORT=$P_NSD ;;
	esac
}

# launch SERVER: starts it (bench/lib/servers.sh); STARTED_PID.
launch() {
	case $1 in
	tern)
		"${PIN[@]}" "$WORK/bin/tern" serve -c "$WORK/tern/tern.toml" >"$WORK/tern/log" 2>&1 &
		STARTED_PID=$!
		;;
	knot) knot_run "$WORK/knot" ;;
	nsd) nsd_run "$WORK/nsd" ;;
	esac
}

version() {
	case $1 in
	tern) echo "tern $TERN_REV" ;;
	knot) knotd -V 2>&1 | head -1 ;;
	nsd) nsd -v 2>&1 | head -1 ;;
	esac
}

printf 'server\tzones\tload_ms\tload_cpu_s\tpss_kb\tqps\tlost_pct\tnoerror_pct\tcpu_us_per_query\tzone_add_ms\n' >"$WORK/raw.tsv"
for s in $SERVERS; do
	case $s in
	knot) command -v knotd >/dev/null || { echo "!!! knot: knotd not installed" >&2; continue; } ;;
	nsd) command -v nsd >/dev/null || { echo "!!! nsd not installed" >&2; continue; } ;;
	esac
	echo "# $(version "$s")" >&2
	prepare "$s"
	t0=$(now)
	launch "$s"
	STARTED=$STARTED_PID
	track "$STARTED"
	# until it answers the last zone (at most 30 minutes)
	if ! wait_for "$STARTED" 36000 0.05 "$WANT" answered "$PORT"; then
		echo "!!! $s never answered $LAST with $WANT; log: $(tail -3 "$WORK/$s/log" | tr '\n' ' ')" >&2
		stop "$STARTED"
		continue
	fi
	t1=$(now)
	lcpu=$(cpu "$STARTED")
	sleep 1
	mem=$(pss "$STARTED")
	echo "  load: $(ms "$t0" "$t1") ms to answer $LAST, CPU $(secs "$lcpu") s, PSS $mem kB" >&2
	a=$(cpu "$STARTED")
	"${OPIN[@]}" dnsperf -s 127.0.0.1 -p "$PORT" -d "$WORK/queries" -l "$DURATION" -c 8 -q 100 -t 1 >"$WORK/$s.dnsperf" 2>&1 || true
	b=$(cpu "$STARTED")
	qps=$(awk '/Queries per second:/ {print $4}' "$WORK/$s.dnsperf")
	done_q=$(awk '/Queries completed:/ {print $3}' "$WORK/$s.dnsperf")
	lost=$(awk '/Queries lost:/ {gsub(/[()%]/, "", $4); print $4}' "$WORK/$s.dnsperf")
	noerr=$(awk '/Response codes:/ {for (i = 3; i <= NF; i++) if ($i == "NOERROR") {gsub(/[(),%]/, "", $(i + 2)); print $(i + 2)}}' "$WORK/$s.dnsperf")
	cpq=$(awk -v c=$((b - a)) -v k="$TCK" -v q="${done_q:-0}" 'BEGIN {if (q > 0) printf "%.2f", c / k / q * 1e6; else print "-"}')
	echo "  qps: ${qps:-?} (lost ${lost:-?}%, NOERROR ${noerr:-?}%), server CPU $cpq us/query" >&2
	add=-
	if [ "$s" = tern ]; then
		printf '$ORIGIN added.test.\n$TTL 3600\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n' >"$WORK/added.zone"
		ta=$(now)
		if "$WORK/bin/tern" ctl -s "$WORK/tern/ctl.sock" zone-add added.test. --file "$WORK/added.zone" >/dev/null; then
			add=$(ms "$ta" "$(now)")
			echo "  zone-add beside $N zones: $add ms" >&2
		else
			echo "!!! tern zone-add failed" >&2
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$N" "$(ms "$t0" "$t1")" "$(secs "$lcpu")" "$mem" "${qps:-}" "${lost:-}" "${noerr:-}" "$cpq" "$add" >>"$WORK/raw.tsv"
	stop "$STARTED"
done

echo
echo "Many small zones: $N zones of 4 records, one entry each in the config; one run each, $DURATION s of dnsperf (8 clients, -q 100) over www of random zones; load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
for s in $SERVERS; do echo "  $(version "$s")"; done
echo "load = start until the last zone's www is answered; mem = PSS of the server's process tree after load"
echo
printf '%-5s %8s %10s %12s %10s %10s %7s %9s %12s %12s\n' server zones "load ms" "load CPU s" "mem MB" qps "lost %" "NOERROR%" "CPU us/q" "zone-add ms"
awk -F'\t' 'NR > 1 {printf "%-5s %8s %10s %12s %10.1f %10.0f %7s %9s %12s %12s\n", $1, $2, $3, $4, $5 / 1024, $6, $7, $8, $9, $10}' "$WORK/raw.tsv"
