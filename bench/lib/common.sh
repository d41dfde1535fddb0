# shellcheck shell=bash
# bench/lib/common.sh - the set-up the benchmark scripts share.
#
# Sourced by bench/lib/servers.sh (so by bench/run.sh), and by
# bench/xfr/bench-xfr.sh and bench/manyzones/bench-manyzones.sh. Sourcing
# it defines functions and sets PIN, OPIN and TCK; nothing else runs.
#
#   PIN, OPIN              command prefixes pinning a server to SERVER_CPU
#                          (0) and the rest (a generator, kdig, polling) to
#                          OTHER_CPU (1); empty without taskset or with
#                          fewer than two CPUs
#   bench_work NAME        WORK: a new directory /tmp/tern-bench-NAME.*,
#                          and an EXIT trap that stops every PID in PIDS
#                          (track) and removes WORK unless KEEP=1
#   track PID / stop PID   have PID stopped at exit / stop it now
#   port_free PORT [FOR]   fails, saying so, when PORT is listened on
#                          (UDP or TCP) on this machine
#   tern_binary DEST       TERN_BIN copied to DEST, or tern built there
#                          from REPO's working tree; TERN_REV its commit
#   wait_for PID TRIES PAUSE WANT CMD...
#                          runs CMD every PAUSE seconds until it prints
#                          WANT (true), PID dies or TRIES runs pass (false)
#   now, ms T0 T1, cpu PID, secs TICKS
#                          wall clock (ns), T1-T0 in ms, CPU ticks of PID's
#                          process tree (reaped children included), ticks
#                          in seconds

# shellcheck disable=SC2034 # PIN, OPIN and TERN_REV are for the callers
SERVER_CPU=${SERVER_CPU:-0}
OTHER_CPU=${OTHER_CPU:-1}
PIN=() OPIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	PIN=(taskset -c "$SERVER_CPU") OPIN=(taskset -c "$OTHER_CPU")
fi
TCK=$(getconf CLK_TCK)

PIDS=()
bench_work() {
	WORK=$(mktemp -d "/tmp/tern-bench-$1.XXXXXX")
	trap bench_cleanup EXIT
}
bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
track() { PIDS+=("$1"); }
stop() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

port_free() {
	if ss -Hlnu "sport = :$1" | grep -q . || ss -Hlnt "sport = :$1" | grep -q .; then
		echo "port $1${2:+ (for $2)} is in use; set BENCH_PORT_BASE" >&2
		return 1
	fi
}

tern_binary() {
	if [ -n "${TERN_BIN:-}" ]; then
		cp "$TERN_BIN" "$1"
	else
		(cd "$REPO" && go build -o "$1" ./cmd/tern)
	fi
	TERN_REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
}

wait_for() {
	local pid=$1 tries=$2 pause=$3 want=$4 i
	shift 4
	for ((i = 0; i < tries; i++)); do
		[ "$("$@")" = "$want" ] && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep "$pause"
	done
	return 1
}

now() { date +%s%N; }
ms() { echo $((($2 - $1) / 1000000)); }
# tree PID: PID and its descendants.
tree() {
	local c
	echo "$1"
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done
}
cpu() {
	local p t=0
	# utime, stime, cutime, cstime: fields 14-17 of /proc/PID/stat,
	# counted after the command name, which may hold spaces (NSD's
	# children are "nsd: server 1").
	for p in $(tree "$1"); do t=$((t + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15} END {if (NR == 0) print 0}'))); done
	echo "$t"
}
secs() { awk -v t="$1" -v k="$TCK" 'BEGIN {printf "%.2f", t / k}'; }
