#!/usr/bin/env bash
# bench/run.sh - the benchmark harness behind `make bench`.
#
# What: measures Tern against NSD, Knot, BIND and PowerDNS (and against an
# "echo floor" that answers by flipping the QR bit) on the same machine, and
# Tern's resolver against Unbound and PowerDNS Recursor over a local DNS
# hierarchy (the "resolver" phase), each
# server on loopback, pinned to CPU 0 with one worker, and the load generator
# (dnsperf, plus `tern perf` when it works) pinned to CPU 1. For every
# workload x client count x generator x server, interleaving the servers run
# by run and repeating, it records QPS, lost %, mean latency, server CPU per
# answered query and CPU utilisation; per server and zone set the zone load
# time and the memory (PSS of the whole process tree). Runs whose answers
# carry the wrong response codes are errors, not results.
#
# Why: so that "fast" is a number with peers and a floor next to it, and
# regressions show up as a changed ratio rather than an impression.
#
# Usage:  bash bench/run.sh [QUICK=1]         (make bench / make bench QUICK=1)
#         QUICK=1 bash bench/run.sh
# Output: bench/out/results.md, bench/out/results.png, raw data beside them.
#
# Knobs (environment): QUICK, DURATION (s per run), REPS, CLIENTS ("1 2 4"),
# OUTSTANDING (generator -q), NOIDLE (0/1, see below),
# SERVERS ("tern nsd knot bind pdns echo unbound pdnsrec"), WORKLOADS (names,
# see below), RES_CLIENTS (clients of the resolver phase, "8"), MIX_N
# (questions in the mix replay), RES_BASE (the hierarchy's first address),
# GENS ("dnsperf ternperf"), TERNPERF_FLAGS (extra tern perf flags, e.g.
# -spin), SIZED (0/1: the sized echo floor, see below), BIG (records in the
# big zone), BENCH_PORT_BASE, AUTH_CPU (the resolver hierarchy's
# authorities' CPU, the generator's by default), AUTH_FIFO (1: run them
# under chrt -f 1; bench/README.md), AUTH_GOMAXPROCS (theirs, 1),
# BENCH_OUT, ROOT_ZONE, TERN_SRC (head|worktree), TERN_BIN. Only loopback
# addresses are ever used.

set -euo pipefail
export PATH="$PATH:/usr/sbin" # nsd, knotd, unbound, pdns_recursor

# The whole script is one { ... } block so bash parses it completely before
# running it: editing run.sh during a run cannot break that run.
{

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
for a in "$@"; do
	case $a in
	QUICK=* | DURATION=* | REPS=* | CLIENTS=* | SERVERS=* | WORKLOADS=* | GENS=* | BIG=*) export "${a?}" ;;
	quick | --quick) export QUICK=1 ;;
	*) echo "usage: $0 [QUICK=1] [DURATION=s] [REPS=n] [CLIENTS='1 2'] ..." >&2; exit 2 ;;
	esac
done
QUICK=${QUICK:-0}
[[ $QUICK == 0 || $QUICK == no || $QUICK == false ]] && QUICK=0 || QUICK=1

if ((QUICK)); then
	: "${DURATION:=1}" "${REPS:=1}" "${CLIENTS:=8}" "${BIG:=100000}" "${MIX_N:=100000}"
else
	: "${DURATION:=3}" "${REPS:=3}" "${CLIENTS:=1 2 4 8 10}" "${BIG:=1000000}" "${MIX_N:=500000}"
fi
# The resolver phase runs one client count: its mix replays take a while.
: "${RES_CLIENTS:=8}"
# The resolver phase's local hierarchy takes 22 loopback addresses from
# RES_BASE, port 53 (the bench's block is 127.0.0.40-127.0.0.79).
: "${RES_BASE:=127.0.0.40}"
: "${SERVERS:=tern nsd knot bind pdns echo unbound pdnsrec}"
: "${GENS:=dnsperf ternperf}"
OUT=${BENCH_OUT:-$HERE/out}
PORT_BASE=${BENCH_PORT_BASE:-25300}
ROOT_ZONE=${ROOT_ZONE:-$REPO/../shared/data/root.zone}
SERVER_CPU=0
GEN_CPU=1
OUTSTANDING=${OUTSTANDING:-100} # dnsperf -q: queries in flight
TERNPERF_FLAGS=${TERNPERF_FLAGS:-} # e.g. -spin: see bench/README.md
# SIZED=1: beside the echo floor, with tern perf, run "echosz", the same
# echo padding its replies to the average size of Tern's answers in each
# UDP workload (measured by a short tern perf run against Tern first), so
# that the report also shows Tern against what the kernel costs for
# answers of that size.
SIZED=${SIZED:-1}
# NOIDLE=1: during each load run keep both CPUs from going idle with a
# SCHED_IDLE busy loop (it runs only when nothing else wants the CPU, and is
# not part of any measured process). In a VM an idle vCPU halts and its
# wake-up costs tens of microseconds per packet hand-off, which otherwise
# penalises servers that block between packets and flatters runtimes that
# spin (Go). NOIDLE=0 measures the machine as it is.
NOIDLE=${NOIDLE:-1}

# Workloads: name | zone set | query file | generator flags | expected rcode | check
#   check: what `benchtool check` verifies on a sample before the load runs.
#   The root workloads send EDNS0 (-e) with and without DO, as almost all
#   real root traffic does; plain 512-byte queries would make servers differ
#   mainly in how they truncate referrals.
#   The large workloads (answers of about 64 KiB over TCP) keep 10 queries
#   in flight with a 5 s timeout, so that a server taking tens of
#   milliseconds per answer shows as its rate, not as timeouts.
WORKLOAD_TABLE="
small-success    |main|small-success.txt |       |NOERROR |answer
small-nxdomain   |main|small-nxdomain.txt|       |NXDOMAIN|nxdomain
small-soa        |main|small-soa.txt     |       |NOERROR |answer
small-tcp        |main|small-success.txt|-m tcp |NOERROR |answer
root-referral    |main|root-referral.txt |-e     |NOERROR |referral
root-referral-do |main|root-referral.txt |-D     |NOERROR |referral
root-nxdomain    |main|root-nxdomain.txt |-e     |NXDOMAIN|nxdomain
root-nxdomain-do |main|root-nxdomain.txt |-D     |NXDOMAIN|nxdomain
big-success      |big |big-success.txt   |       |NOERROR |answer
bigsigned-do     |bigsigned|big-success.txt|-D     |NOERROR |answer
large-tcp        |large|large-tcp.txt    |-m tcp -q 10 -t 5|NOERROR |large
large-glue-tcp   |large|large-glue-tcp.txt|-m tcp -q 10 -t 5|NOERROR |large
res-hits         |resolver|res-hits.txt  |       |NOERROR |resolved
res-cold         |resolver|res-cold.txt  |       |NOERROR |resolved
res-mix          |resolver|res-mix.txt   |-n 1   |NOERROR |resolved
res-hits-v       |resolver-v|res-hits.txt|       |NOERROR |resolved
res-cold-v       |resolver-v|res-cold.txt|       |NOERROR |resolved
res-mix-v        |resolver-v|res-mix.txt |-n 1   |NOERROR |resolved
"
# The resolver workloads (bench/README.md, "The resolver phase"):
#   res-hits  10,000 questions, every one asked once before each run (the
#             cache is warm), then asked over and over;
#   res-cold  every query a new name under a wildcard zone (delegations
#             cached): a fresh query file with new names for every run;
#   res-mix   a replay, once through (-n 1), of MIX_N questions drawn
#             Zipf-distributed over ~100k names in ~1k zones; the resolver
#             is restarted before every run, so it starts cold, and its
#             cache hit rate and memory are recorded after the run.
#   res-hits-v, res-cold-v, res-mix-v  res-hits, res-cold and res-mix
#             over the same hierarchy signed (benchtool resgen -sign: ECDSA P-256, NSEC; the
#             "resolver-v" phase), every resolver validating from its
#             root's DS (RES_ANCHOR), aggressive NSEC off in all three so
#             that a cold name under the wildcard zone is resolved, not
#             synthesised (RFC 8198 §5.3): issue 12's comparison.
# A mix run lasts until its file is replayed (at most MIX_LIMIT seconds).
MIX_LIMIT=${MIX_LIMIT:-300}
declare -A W_LIMIT=([res-mix]=$MIX_LIMIT [res-mix-v]=$MIX_LIMIT)
declare -A W_PHASE=() W_QF=() W_FLAGS=() W_RC=() W_CHECK=()
ALL_WORKLOADS=()
trim() { local x=$1; x=${x#"${x%%[![:space:]]*}"}; printf '%s' "${x%"${x##*[![:space:]]}"}"; }
while IFS='|' read -r name phase qf flags rc check; do
	name=$(trim "$name")
	[[ -n $name ]] || continue
	ALL_WORKLOADS+=("$name")
	W_PHASE[$name]=$(trim "$phase") W_QF[$name]=$(trim "$qf") W_FLAGS[$name]=$(trim "$flags")
	W_RC[$name]=$(trim "$rc") W_CHECK[$name]=$(trim "$check")
done <<<"$WORKLOAD_TABLE"
: "${WORKLOADS:=${ALL_WORKLOADS[*]}}"
for w in $WORKLOADS; do
	[[ -n ${W_PHASE[$w]:-} ]] || { echo "unknown workload $w (known: ${ALL_WORKLOADS[*]})" >&2; exit 2; }
done

# Zone sets: which zones a server carries in each phase.
DATA=$OUT/data
RESDATA=$DATA/resolver
RES_HINTS=$RESDATA/root.hints
# the validating phase's (resolver-v) hierarchy, signed, and its anchor;
# set_res_phase points RESDATA, RES_HINTS and RES_ANCHOR at a phase's.
RESDATA_SIGNED=$DATA/resolver-signed
RES_ANCHOR=
set_res_phase() {
	RESDATA=$DATA/resolver RES_ANCHOR=
	[[ $1 == resolver-v ]] && RESDATA=$RESDATA_SIGNED RES_ANCHOR=$RESDATA_SIGNED/root.key
	RES_HINTS=$RESDATA/root.hints
}
RES_PROBE=www.dom0000.alpha. # a name every resolver must resolve before it is measured
declare -A ZONESET=(
	[resolver]=""
	[resolver-v]=""
	[main]=".=$DATA/root.zone bench.test.=$DATA/small.zone"
	[big]="big.test.=$DATA/big.zone"
	[bigsigned]="big.test.=$DATA/big.signed.zone"
	[large]="large.test.=$DATA/large.zone"
)
declare -A PROBE_NAME=([main]=bench.test. [big]=big.test. [bigsigned]=big.test. [large]=large.test. [resolver]=. [resolver-v]=.)
# BIND and PowerDNS take minutes over a signed zone of millions of
# records and are not the servers the issue's targets name: the
# bigsigned phase runs Tern, NSD, Knot and the floor.
# BIND 9.18 cannot load the large phase's zone: its 1000-MX RRset is more
# than the 64 KiB an RRset may take there ("ran out of space").
# The resolvers (unbound, pdnsrec) run in the resolver phase only, the
# authoritative peers never in it.
declare -A PHASE_SKIP=([main]="unbound pdnsrec" [big]="unbound pdnsrec" [bigsigned]="bind pdns unbound pdnsrec"
	[large]="bind unbound pdnsrec" [resolver]="nsd knot bind pdns" [resolver-v]="nsd knot bind pdns")

BIN=$OUT/bin
RUN=$OUT/run
RAW=$OUT/raw.tsv
SRV=$OUT/servers.tsv
ERRLOG=$OUT/errors.log
RESTSV=$OUT/resolver.tsv

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
loud() {
	printf '\n!!! ERROR: %s\n\n' "$*" >&2
	printf '%s\n' "$*" >>"$ERRLOG"
}

# --- cleanup: stop every server this script started, by PID -------------
declare -A PID=()  # server name -> pid (current phase)
declare -A LIVE=() # pids started and not yet stopped
stop_pid() {
	local p=$1 i
	[[ -n ${LIVE[$p]:-} ]] || return 0 # never signal a pid we did not start
	unset "LIVE[$p]"
	kill -TERM "$p" 2>/dev/null || return 0
	for i in $(seq 50); do
		kill -0 "$p" 2>/dev/null || break
		# reap it if it is our child and has exited
		[[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) == Z ]] && break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}
SRC_TMP=
cleanup() {
	local p
	for p in "${!LIVE[@]}"; do
		stop_pid "$p"
	done
	[[ -z $SRC_TMP ]] || rm -rf "$SRC_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- prerequisites --------------------------------------------------------
need_apt() { # need_apt CMD PACKAGE...: install PACKAGEs if CMD is missing
	local cmd=$1; shift
	command -v "$cmd" >/dev/null && return 0
	log "installing $* (for $cmd)"
	# Keep the packages' own services from starting (a system named or
	# pdns_server would listen on port 53, and pdns would poll for security
	# updates over the network): policy-rc.d exit 101 = "do not start".
	local policy=/usr/sbin/policy-rc.d made=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1
	fi
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >"$OUT/apt.log" 2>&1; then
		apt-get update -q >>"$OUT/apt.log" 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>"$OUT/apt.log" 2>&1 || true
	fi
	if ((made)); then rm -f "$policy"; fi
	command -v "$cmd" >/dev/null
}

mkdir -p "$OUT" "$BIN" "$RUN"
rm -rf "${RUN:?}"/* "$ERRLOG"
: >"$ERRLOG"
START_TS=$(date +%s)

need_apt dnsperf dnsperf || { echo "dnsperf is required" >&2; exit 1; }
need_apt gnuplot gnuplot-nox || log "gnuplot missing: no chart"
need_apt gcc gcc || { echo "gcc is required (echo floor)" >&2; exit 1; }
need_apt jq jq || log "jq missing: Tern's resolver counters (tern ctl --json stats) not read"
if ((NOIDLE)) && ! command -v chrt >/dev/null; then
	log "chrt (util-linux) missing: NOIDLE=0"
	NOIDLE=0
fi
wanted=()
for s in $SERVERS; do
	case $s in
	nsd) need_apt nsd nsd || { loud "nsd not installable: skipped"; continue; } ;;
	knot) need_apt knotd knot || { loud "knot not installable: skipped"; continue; } ;;
	bind) need_apt named bind9 || { loud "bind9 not installable: skipped"; continue; } ;;
	pdns) need_apt pdns_server pdns-server pdns-backend-bind || { loud "pdns not installable: skipped"; continue; } ;;
	unbound) need_apt unbound unbound || { loud "unbound not installable: skipped"; continue; } ;;
	pdnsrec) need_apt pdns_recursor pdns-recursor || { loud "pdns-recursor not installable: skipped"; continue; } ;;
	esac
	wanted+=("$s")
done
SERVERS="${wanted[*]}"

log "building benchtool, echo floor and tern"
(cd "$REPO" && go build -o "$BIN/benchtool" ./bench/cmd/benchtool)
BT=$BIN/benchtool
gcc -O2 -Wall -o "$BIN/echo" "$HERE/echo/echo.c"
if [[ " $SERVERS " == *" tern "* || " $GENS " == *" ternperf "* ]]; then
	# Build Tern from the committed tree (HEAD), not the working tree: in a
	# shared checkout the working tree holds other people's unfinished edits,
	# and a benchmark should name the commit it measured. TERN_SRC=worktree
	# builds the working tree instead; TERN_BIN=path uses a ready binary.
	TERN_REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo worktree)
	tern_build() {
		if [[ -n ${TERN_BIN:-} ]]; then
			cp "$TERN_BIN" "$BIN/tern" && TERN_REV="binary $TERN_BIN"
		elif [[ ${TERN_SRC:-head} == worktree || $TERN_REV == worktree ]]; then
			TERN_REV="$TERN_REV+worktree"
			(cd "$REPO" && go build -o "$BIN/tern" ./cmd/tern)
		else
			# outside the repository, so gofmt/vet of the repo never see it
			SRC_TMP=$(mktemp -d /tmp/tern-bench-src.XXXXXX)
			(cd "$REPO" && git archive --format=tar HEAD) | tar -x -C "$SRC_TMP"
			(cd "$SRC_TMP" && go build -o "$BIN/tern" ./cmd/tern)
		fi
	}
	if ! tern_build >"$OUT/tern-build.log" 2>&1; then
		loud "tern ($TERN_REV) does not build (see $OUT/tern-build.log): tern server and tern perf skipped"
		SERVERS=$(tr ' ' '\n' <<<"$SERVERS" | grep -vx tern | xargs)
		GENS=$(tr ' ' '\n' <<<"$GENS" | grep -vx ternperf | xargs)
	fi
fi

AUTH_WORKLOADS=0 RES_WORKLOADS=0
for w in $WORKLOADS; do
	if [[ ${W_PHASE[$w]} == resolver* ]]; then RES_WORKLOADS=1; else AUTH_WORKLOADS=1; fi
done
if ((AUTH_WORKLOADS)); then
	if [[ ! -r $ROOT_ZONE ]]; then
		echo "the signed root zone is not at $ROOT_ZONE (set ROOT_ZONE=...)" >&2
		exit 1
	fi
	log "generating data (big zone: $BIG records)"
	"$BT" gen -out "$DATA" -root "$ROOT_ZONE" -big "$BIG"
fi
if ((RES_WORKLOADS)); then
	log "generating the resolver phase's hierarchy and queries (mix: $MIX_N questions)"
	"$BT" resgen -out "$RESDATA" -base "$RES_BASE" -mix "$MIX_N"
fi
if [[ " $WORKLOADS " == *" res-"*"-v "* ]]; then
	# res-mix-v replays the same Zipf questions as res-mix (same seeds)
	mixv=1
	[[ " $WORKLOADS " == *" res-mix-v "* ]] && mixv=$MIX_N
	log "generating and signing the resolver-v phase's hierarchy (mix: $mixv questions)"
	"$BT" resgen -out "$RESDATA_SIGNED" -base "$RES_BASE" -mix "$mixv" -sign
fi
if [[ " $WORKLOADS " == *" bigsigned-do "* ]]; then
	# The big zone signed by Tern itself (ECDSA P-256, NSEC), with keys
	# kept in the data directory from run to run.
	log "signing the big zone for the bigsigned phase"
	mkdir -p "$DATA/keys"
	"$BIN/tern" zone sign "$DATA/big.zone" --origin big.test. --key-dir "$DATA/keys" >"$DATA/big.signed.zone.tmp" 2>"$OUT/sign.log"
	mv "$DATA/big.signed.zone.tmp" "$DATA/big.signed.zone"
fi

# shellcheck source=bench/lib/servers.sh
source "$HERE/lib/servers.sh"

# Ports: one per server, fixed offsets from PORT_BASE.
declare -A PORT=([tern]=0 [nsd]=1 [knot]=2 [bind]=3 [pdns]=4 [echo]=5 [echosz]=6 [unbound]=7 [pdnsrec]=8)
for s in "${!PORT[@]}"; do
	PORT[$s]=$((PORT_BASE + PORT[$s]))
	port_free "${PORT[$s]}" "$s" || exit 1
done

# ternperf_has_tcp: does this tern perf take -T? (Its -h exits non-zero,
# which pipefail would count against a pipe into grep.)
ternperf_has_tcp() {
	local help
	help=$("$BIN/tern" perf -h 2>&1 || true)
	grep -qE '^ +-T\b' <<<"$help"
}

# tern perf is used only if it answers a smoke test with parseable JSON.
ternperf_ok() {
	local port=$1 phase=$2 f=$RUN/ternperf-smoke.txt q=$RUN/ternperf-smoke-$2.txt
	# The SOA of the phase's own zone: the big phase serves no small zone.
	echo "${PROBE_NAME[$phase]} SOA" >"$q"
	timeout 20 taskset -c "$GEN_CPU" "$BIN/tern" perf -s 127.0.0.1 -p "$port" -d "$q" \
		-l 1 -c 1 -q 10 --json >"$f" 2>&1 || true
	"$BT" parse -gen ternperf -expect NOERROR "$f" | awk -F'\t' '{exit !($3=="ok")}'
}

# --- one server's life in a phase ----------------------------------------
tree_cpu() { "$BT" tree -pid "$1" 2>/dev/null | awk '{print $1}' || true; }

# auth_cpu: the CPU time (µs) of the resolver phase's authorities so far.
auth_cpu() {
	local p t=0 c
	for p in "${AUTH_PIDS[@]}"; do
		c=$(tree_cpu "$p")
		t=$((t + ${c:-0}))
	done
	echo "$t"
}

# start_server NAME PHASE: start, wait until it answers, record load time
# and memory. Sets PID[NAME] on success.
# In the resolver phase a server is its resolver (start_res_NAME), and it
# is up when it has resolved RES_PROBE. SDIR[NAME] is its work directory,
# START_PSS[NAME] its PSS (kB) once up.
declare -A SDIR=() START_PSS=()
RES_NOTYET=""
start_server() {
	local s=$1 phase=$2 dir=$RUN/$phase-$1 t0 ms mem start=start_$1
	local probe=(-name "${PROBE_NAME[$phase]:-.}" -type SOA)
	if [[ $phase == resolver* && $s != echo* ]]; then
		if [[ $s == tern ]] && ! ternres_supported; then
			log "  tern: no resolver in this tern (tern serve has no --resolver): not yet"
			RES_NOTYET="tern serve at ${TERN_REV:-?} has no resolver yet"
			return 1
		fi
		start=start_res_$s
		probe=(-resolver -name "$RES_PROBE" -type A)
	fi
	[[ $s == echo* ]] && probe=(-echo -name . -type SOA)
	mkdir -p "$dir"
	SDIR[$s]=$dir
	unset "PID[$s]"
	t0=$(date +%s%N)
	# shellcheck disable=SC2086 # the zone set is a word list
	"$start" "$dir" "${PORT[$s]}" ${ZONESET[$phase]}
	LIVE[$STARTED_PID]=1
	if ! "$BT" probe -addr "127.0.0.1:${PORT[$s]}" "${probe[@]}" -pid "$STARTED_PID" -timeout 600s >/dev/null 2>"$dir/probe.err"; then
		ms=$((($(date +%s%N) - t0) / 1000000))
		loud "$s did not come up with zone set '$phase' after ${ms} ms: $(cat "$dir/probe.err"); last log lines: $(tail -3 "$dir/log" | tr '\n' ' ')"
		printf '%s\t%s\tfailed\t%s\t0\t0\t0\n' "$phase" "$s" "$ms" >>"$SRV"
		stop_pid "$STARTED_PID"
		return 1
	fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	PID[$s]=$STARTED_PID
	mem=$("$BT" tree -pid "$STARTED_PID")
	read -r _ pss rss np <<<"$mem"
	START_PSS[$s]=$pss
	printf '%s\t%s\tloaded\t%s\t%s\t%s\t%s\n' "$phase" "$s" "$ms" "$pss" "$rss" "$np" >>"$SRV"
	log "  $s up on port ${PORT[$s]} in ${ms} ms, PSS $((pss / 1024)) MB ($np processes)"
}

# verify SERVER WORKLOAD: check a sample of answers before measuring.
declare -A BROKEN=() # "server/workload" -> 1 when the check failed
verify() {
	local s=$1 w=$2 doflag=() out
	[[ $s == echo* ]] && return 0 # the floor echoes queries: nothing to check
	[[ ${W_FLAGS[$w]} == *-e* ]] && doflag=(-edns)
	[[ ${W_FLAGS[$w]} == *-D* ]] && doflag=(-do)
	[[ ${W_FLAGS[$w]} == *tcp* ]] && doflag+=(-tcp)
	local qf=$DATA/${W_QF[$w]}
	[[ ${W_PHASE[$w]} == resolver* ]] && qf=$RESDATA/${W_QF[$w]}
	if ! out=$("$BT" check -addr "127.0.0.1:${PORT[$s]}" -queries "$qf" -expect "${W_CHECK[$w]}" "${doflag[@]}" -n 20 2>&1); then
		loud "$s fails the answer check for $w: $(head -3 <<<"$out" | tr '\n' ' ')"
		BROKEN[$s/$w]=1
	fi
}

# spin_start / spin_stop: the NOIDLE busy loops, bounded by timeout even if
# this script were killed without running its trap.
SPIN=()
spin_start() {
	SPIN=()
	((NOIDLE)) || return 0
	local cpu
	for cpu in $SERVER_CPU $GEN_CPU; do
		taskset -c "$cpu" chrt --idle 0 timeout $((${1:-$DURATION} + 30)) sh -c 'while :; do :; done' &
		SPIN+=($!)
		LIVE[$!]=1
	done
}
spin_stop() {
	local p
	for p in "${SPIN[@]}"; do stop_pid "$p"; done
	SPIN=()
}

# one_run WORKLOAD GEN SERVER CLIENTS REP: one bounded load run, one raw.tsv
# row (also left in LAST_ROW). RUN_QF, when set, is the query file instead
# of the workload's; a workload's W_LIMIT replaces DURATION as its limit.
LAST_ROW=
one_run() {
	local w=$1 g=$2 s=$3 c=$4 rep=$5 f cpu0 cpu1 t0 t1 row
	local qf=${RUN_QF:-$DATA/${W_QF[$w]}} flags=${W_FLAGS[$w]} expect=${W_RC[$w]}
	local lim=${W_LIMIT[$w]:-$DURATION}
	[[ ${W_PHASE[$w]} == resolver* && -z ${RUN_QF:-} ]] && qf=$RESDATA/${W_QF[$w]}
	[[ $s == echo* ]] && expect=NOERROR # echoed queries carry rcode 0
	f=$RUN/$w.$g.$s.c$c.r$rep.txt
	local cmd=(dnsperf)
	if [[ $g == ternperf ]]; then
		# tern perf spells TCP -T and sends EDNS0 by default; dnsperf sends
		# plain queries unless -D, so turn EDNS off to ask the same thing.
		cmd=("$BIN/tern" perf --json)
		[[ $flags == *-D* || $flags == *-e* ]] || flags+=" -e=false"
		flags=${flags/-m tcp/-T}
		flags+=" $TERNPERF_FLAGS"
	fi
	# shellcheck disable=SC2206 # flags are words
	cmd+=(-s 127.0.0.1 -p "${PORT[$s]}" -d "$qf" -l "$lim" -c "$c" -q "$OUTSTANDING" -t 1 $flags)
	# bash's time keyword reports the generator's own CPU time: a generator
	# far below 100 % of its core was starved by other load on the machine.
	local TIMEFORMAT='%R %U %S' gtime gen_pct auth0= auth1= auth_pct=
	spin_start "$lim"
	[[ ${W_PHASE[$w]} == resolver* ]] && auth0=$(auth_cpu)
	cpu0=$(tree_cpu "${PID[$s]}")
	t0=$(date +%s%N)
	gtime=$({ time timeout $((lim + 20)) taskset -c "$GEN_CPU" "${cmd[@]}" >"$f" 2>&1; } 2>&1) || true
	t1=$(date +%s%N)
	cpu1=$(tree_cpu "${PID[$s]}")
	[[ -n $auth0 ]] && auth1=$(auth_cpu)
	spin_stop
	gen_pct=$(awk '{ if ($1 > 0) printf "%.0f", 100 * ($2 + $3) / $1; else print 0 }' <<<"${gtime##*$'\n'}")
	[[ -n $auth1 ]] && auth_pct=$(awk -v a="$auth0" -v b="$auth1" -v t=$(((t1 - t0) / 1000)) 'BEGIN { if (t > 0) printf "%.0f", 100 * (b - a) / t }')
	if [[ -z $cpu0 || -z $cpu1 ]]; then
		loud "$s died during $w ($g, c=$c)"
		unset "PID[$s]"
		cpu0=0 cpu1=0
	fi
	row=$("$BT" parse -gen "$g" -expect "$expect" -cpu-us $((cpu1 - cpu0)) -wall-us $(((t1 - t0) / 1000)) "$f") ||
		row=$(printf '0\t0\tERROR\t0\t0\t0\t0\t0\t-\tcannot parse generator output')
	LAST_ROW=$row
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$g" "$s" "$c" "$rep" "$row" "$gen_pct" "$auth_pct" >>"$RAW"
	if [[ $(cut -f3 <<<"$row") != ok ]]; then
		loud "run $w/$g/$s c=$c rep=$rep: $(cut -f10 <<<"$row") [rcodes $(cut -f9 <<<"$row")] - see $f"
	else
		log "    $w $g $s c=$c: $(printf '%.0f' "$(cut -f4 <<<"$row")") qps, lost $(cut -f7 <<<"$row")%, generator CPU ${gen_pct}%${auth_pct:+, authorities CPU ${auth_pct}%}"
	fi
}

# supports SERVER GEN WORKLOAD: combinations that make no sense are skipped.
supports() {
	local s=$1 g=$2 w=$3 flags=${W_FLAGS[$3]}
	[[ $flags == *tcp* && $s == echo* ]] && return 1 # the floor is UDP only
	[[ $s == echosz && $g != ternperf ]] && return 1 # sized floor: tern perf only
	[[ $flags == *tcp* && $g == ternperf && $TERNPERF_TCP == 0 ]] && return 1
	# dnsperf (2.10) never completes a TCP answer near 64 KiB: every query
	# times out, whatever the server. The large answers are tern perf's.
	[[ $w == large-* && $g == dnsperf ]] && return 1
	# the echo floors are the floor of cache hits, not of resolution
	[[ $s == echo* && ${W_PHASE[$w]} == resolver* && $w != res-hits* ]] && return 1
	[[ -n ${PID[$s]:-} && -z ${BROKEN[$s/$w]:-} ]]
}

# answer_size WORKLOAD: the average size of Tern's answers in WORKLOAD, from
# a short tern perf run against it (empty if that fails).
answer_size() {
	local w=$1 flags=${W_FLAGS[$1]} out
	[[ $flags == *-D* || $flags == *-e* ]] || flags+=" -e=false"
	# shellcheck disable=SC2086 # flags are words
	local qf=$DATA/${W_QF[$w]}
	[[ ${W_PHASE[$w]} == resolver* ]] && qf=$RESDATA/${W_QF[$w]}
	out=$(timeout 20 taskset -c "$GEN_CPU" "$BIN/tern" perf -s 127.0.0.1 -p "${PORT[tern]}" \
		-d "$qf" -l 1 -c 1 -q 10 $flags 2>&1) || true
	sed -n 's/.*Average packet size: *request [0-9]*, response \([0-9]*\).*/\1/p' <<<"$out" | head -1
}

# echosz_start WORKLOAD SIZE / echosz_stop: the sized echo floor for one
# workload's runs.
echosz_start() {
	local w=$1 dir=$RUN/$phase-echosz-$1
	mkdir -p "$dir"
	ECHO_SIZE=$2 start_echosz "$dir" "${PORT[echosz]}"
	LIVE[$STARTED_PID]=1
	if "$BT" probe -addr "127.0.0.1:${PORT[echosz]}" -echo -name . -type SOA -pid "$STARTED_PID" -timeout 10s >/dev/null 2>"$dir/probe.err"; then
		PID[echosz]=$STARTED_PID
		log "  echosz up on port ${PORT[echosz]} for $w, replies padded to $2 bytes"
	else
		loud "the sized echo floor did not come up for $w: $(cat "$dir/probe.err")"
		stop_pid "$STARTED_PID"
	fi
}
echosz_stop() {
	[[ -n ${PID[echosz]:-} ]] && stop_pid "${PID[echosz]}"
	unset "PID[echosz]"
}

# --- the resolver phase's helpers -------------------------------------------

# authorities_up: start the local hierarchy's authorities and wait until
# each answers its first zone; false (and logged) if any does not.
AUTH_CPU=${AUTH_CPU:-$GEN_CPU}
authorities_up() {
	local a addr zone p i=0 err busy=()
	# the hierarchy's 22 addresses from RES_BASE, port 53
	for a in $(seq "${RES_BASE##*.}" $((${RES_BASE##*.} + 21))); do
		ss -Hlnu "src ${RES_BASE%.*}.$a:53" | grep -q . && busy+=("${RES_BASE%.*}.$a")
	done
	if ((${#busy[@]})); then
		loud "something already listens on port 53 of ${busy[*]}: resolver phase skipped (set RES_BASE)"
		return 1
	fi
	start_authorities "$RESDATA"
	for p in "${AUTH_PIDS[@]}"; do LIVE[$p]=1; done
	while read -r a addr zone; do
		if ! err=$("$BT" probe -addr "$addr" -name "$zone" -type SOA -pid "${AUTH_PIDS[$i]}" -timeout 300s 2>&1 >/dev/null); then
			loud "the hierarchy's $a authority did not come up: $err; $(tail -3 "$RESDATA/auth-$a.log" | tr '\n' ' ')"
			return 1
		fi
		i=$((i + 1))
	done <"$RESDATA/auth-probes.txt"
	log "  the local hierarchy's authorities are up (root, TLD and second-level tern serve on ${RES_BASE%.*}.$((${RES_BASE##*.}))-$((${RES_BASE##*.} + 21)):53, CPU $AUTH_CPU)"
}
authorities_down() {
	local p
	for p in "${AUTH_PIDS[@]}"; do stop_pid "$p"; done
	AUTH_PIDS=()
}

# res_warm SERVER: ask every question of res-hits once (twice, if the
# first pass lost some), so that the hits run finds them all cached.
res_warm() {
	local s=$1 i out
	for i in 1 2; do
		out=$(timeout 120 taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "${PORT[$s]}" -d "$RESDATA/res-hits.txt" \
			-n 1 -c 1 -q 100 -t 5 2>&1) || true
		grep -qE 'Queries lost: +0 ' <<<"$out" && return 0
	done
	loud "$s: warming the cache for res-hits lost queries twice: $(grep -E 'Queries (completed|lost)' <<<"$out" | tr -s ' ' | tr '\n' ' ')"
}

# res_restart SERVER PHASE: a fresh resolver process (empty cache) for a
# mix run, configured for PHASE (resolver, or resolver-v: validating).
res_restart() {
	local s=$1
	[[ -n ${PID[$s]:-} ]] && stop_pid "${PID[$s]}"
	unset "PID[$s]"
	start_server "$s" "$2" >/dev/null 2>&1 || loud "$s did not restart for a $2 mix run"
}

# res_record WORKLOAD GEN SERVER REP: after a mix run, the resolver's own
# counters and memory, one resolver.tsv row.
res_record() {
	local w=$1 g=$2 s=$3 rep=$4 q h r n m cb pss
	[[ -n ${PID[$s]:-} ]] || return 0
	read -r q h r n m cb <<<"$(res_stats "$s" "${SDIR[$s]}")"
	read -r _ pss _ _ <<<"$("$BT" tree -pid "${PID[$s]}")"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$g" "$s" "$rep" \
		"$(cut -f5 <<<"$LAST_ROW")" "$(cut -f6 <<<"$LAST_ROW")" "${START_PSS[$s]:-0}" "$pss" "$q" "$h" "$r" "$n" "$m" "$cb" >>"$RESTSV"
}

# --- main -------------------------------------------------------------------
printf '%s\n' "workload	gen	server	clients	rep	cpu_us	wall_us	status	qps	sent	completed	lost_pct	lat_us	rcodes	reason	gen_cpu_pct	auth_cpu_pct" >"$RAW"
printf 'phase\tserver\tevent\tload_ms\tpss_kb\trss_kb\tnproc\n' >"$SRV"
printf 'workload\tgen\tserver\trep\tsent\tcompleted\tpss0_kb\tpss1_kb\tsrv_queries\tsrv_hits\tsrv_rrsets\tsrv_negative\tsrv_messages\tsrv_cache_bytes\n' >"$RESTSV"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
COLD_SEED=100
# a cold run's query file: more fresh names than the fastest resolver asks
COLD_N=$((DURATION * 150000))
est=0
for w in $WORKLOADS; do
	wc=$CLIENTS
	[[ ${W_PHASE[$w]} == resolver* ]] && wc=$RES_CLIENTS
	for s in $SERVERS; do
		[[ " ${PHASE_SKIP[${W_PHASE[$w]}]:-} " == *" $s "* ]] && continue
		[[ $s == echo && (${W_FLAGS[$w]} == *tcp* || (${W_PHASE[$w]} == resolver* && $w != res-hits*)) ]] ||
			est=$((est + $(wc -w <<<"$wc")))
	done
done
est=$((est * $(wc -w <<<"$GENS") * REPS))
log "about $est load runs of ${DURATION} s (a mix run lasts its whole replay): roughly $((est * (DURATION + 1) / 60 + 1)) minutes"
for phase in main big bigsigned large resolver resolver-v; do
	ws=()
	for w in $WORKLOADS; do [[ ${W_PHASE[$w]} == "$phase" ]] && ws+=("$w"); done
	((${#ws[@]})) || continue
	log "phase '$phase': zones ${ZONESET[$phase]//$DATA\//}; workloads ${ws[*]}"
	PID=()
	BROKEN=()
	phase_clients=$CLIENTS
	if [[ $phase == resolver* ]]; then
		set_res_phase "$phase"
		phase_clients=$RES_CLIENTS
		authorities_up || { authorities_down; continue; }
	fi
	for s in $SERVERS; do
		[[ " ${PHASE_SKIP[$phase]:-} " == *" $s "* ]] && continue
		start_server "$s" "$phase" || true
	done
	phase_gens=$GENS
	TERNPERF_TCP=0
	if [[ " $GENS " == *" ternperf "* ]]; then
		if [[ -n ${PID[echo]:-} ]] && ternperf_ok "${PORT[echo]}" "$phase"; then
			ternperf_has_tcp && TERNPERF_TCP=1
		elif [[ -n ${PID[nsd]:-} ]] && ternperf_ok "${PORT[nsd]}" "$phase"; then
			ternperf_has_tcp && TERNPERF_TCP=1
		else
			loud "tern perf does not work yet ($(head -c 200 "$RUN/ternperf-smoke.txt" | tr '\n' ' ')): generator ternperf skipped"
			phase_gens=$(tr ' ' '\n' <<<"$GENS" | grep -vx ternperf | xargs)
			GENS=$phase_gens
		fi
	fi
	for s in "${!PID[@]}"; do
		for w in "${ws[@]}"; do
			verify "$s" "$w"
			# a failed check shows in the tables as an ERROR row (rep 0)
			if [[ -n ${BROKEN[$s/$w]:-} ]]; then
				for g in $phase_gens; do
					printf '%s\t%s\t%s\t%s\t0\t0\t0\tERROR\t0\t0\t0\t0\t0\t-\tnot run: answers failed the check\t\n' \
						"$w" "$g" "$s" "${CLIENTS%% *}" >>"$RAW"
				done
			fi
		done
	done

	up=()
	for s in $SERVERS; do [[ -n ${PID[$s]:-} ]] && up+=("$s"); done
	declare -A SIZE=()
	if ((SIZED)) && [[ -n ${PID[tern]:-} && -n ${PID[echo]:-} && " $phase_gens " == *" ternperf "* ]]; then
		for w in "${ws[@]}"; do
			[[ ${W_FLAGS[$w]} == *tcp* || -n ${BROKEN[tern/$w]:-} ]] && continue
			[[ $phase == resolver* && $w != res-hits* ]] && continue
			SIZE[$w]=$(answer_size "$w")
			[[ -n ${SIZE[$w]} ]] || unset "SIZE[$w]"
		done
	fi
	rot=0
	for rep in $(seq "$REPS"); do
		for w in "${ws[@]}"; do
			[[ -n ${SIZE[$w]:-} ]] && echosz_start "$w" "${SIZE[$w]}"
			for c in $phase_clients; do
				for g in $phase_gens; do
					# rotate the server order from one group of runs to the
					# next so that no server always goes first
					n=${#up[@]}
					rot=$((rot + 1))
					for i in $(seq 0 $((n - 1))); do
						s=${up[$(((i + rot) % n))]}
						supports "$s" "$g" "$w" || continue
						RUN_QF=
						case $w in
						res-hits | res-hits-v) [[ $s == echo* ]] || res_warm "$s" ;;
						res-cold | res-cold-v)
							COLD_SEED=$((COLD_SEED + 1))
							RUN_QF=$RUN/res-cold.$COLD_SEED.txt
							"$BT" coldq -out "$RUN_QF" -n "$COLD_N" -seed "$COLD_SEED"
							;;
						res-mix | res-mix-v)
							res_restart "$s" "$phase"
							supports "$s" "$g" "$w" || continue
							;;
						esac
						one_run "$w" "$g" "$s" "$c" "$rep"
						case $w in
						res-cold | res-cold-v)
							rm -f "$RUN_QF"
							if (($(cut -f5 <<<"$LAST_ROW" | cut -d. -f1) > COLD_N)); then
								loud "run res-cold/$g/$s: $(cut -f5 <<<"$LAST_ROW") queries sent from a file of $COLD_N names: some were asked twice (raise COLD_N)"
							fi
							;;
						res-mix | res-mix-v)
							res_record "$w" "$g" "$s" "$rep"
							if (($(cut -f5 <<<"$LAST_ROW" | cut -d. -f1) < MIX_N)); then
								loud "run $w/$g/$s: the replay stopped after $(cut -f5 <<<"$LAST_ROW") of $MIX_N questions (MIX_LIMIT ${MIX_LIMIT} s): its rate and hit rate are not comparable"
							fi
							;;
						esac
						RUN_QF=
					done
					if supports echosz "$g" "$w"; then
						one_run "$w" "$g" echosz "$c" "$rep"
					fi
				done
			done
			echosz_stop
		done
	done

	for s in "${up[@]}"; do
		[[ -n ${PID[$s]:-} ]] || continue
		read -r _ pss rss np <<<"$("$BT" tree -pid "${PID[$s]}")"
		printf '%s\t%s\tend\t-\t%s\t%s\t%s\n' "$phase" "$s" "$pss" "$rss" "$np" >>"$SRV"
		stop_pid "${PID[$s]}"
	done
	[[ $phase == resolver* ]] && authorities_down
done

# --- report ---------------------------------------------------------------------
elapsed=$(($(date +%s) - START_TS))
{
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $( ((QUICK)) && echo 'QUICK mode' || echo 'full mode'), took ${elapsed} s"
	echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); servers on CPU $SERVER_CPU, generator on CPU $GEN_CPU (shared machine: other load adds noise)"
	echo "runs: ${DURATION} s each, ${REPS} repeat(s), clients (-c): ${CLIENTS}, ${OUTSTANDING} queries outstanding, generators: ${GENS}${TERNPERF_FLAGS:+ (tern perf with $TERNPERF_FLAGS)}"
	if ((NOIDLE)); then
		echo "NOIDLE=1: SCHED_IDLE busy loops kept both CPUs from idling during runs (no vCPU halt/wake-up latency); NOIDLE=0 to measure without"
	else
		echo "NOIDLE=0: CPUs could idle between packets (wake-up latency included)"
	fi
	echo "load average (1, 5, 15 min) at the start: $LOAD_START; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "big zone: ${BIG} A records; tern: ${TERN_REV:-not built}"
	if ((RES_WORKLOADS)); then
		echo "resolver phase: $(unbound -V 2>/dev/null | awk 'NR==1{print "Unbound", $2}'), PowerDNS Recursor $(pdns_recursor --version 2>&1 | grep -o 'Recursor [0-9.]*' | head -1 | cut -d' ' -f2); ${RES_CLIENTS} client(s); mix: ${MIX_N} questions replayed once; authorities on CPU ${AUTH_CPU} with the generator${RES_NOTYET:+; Tern: not yet ($RES_NOTYET)}"
	fi
	echo "versions: NSD $(nsd -v 2>&1 | head -1 | awk '{print $3}'), Knot $(knotd -V 2>&1 | awk '{print $NF}'), BIND $(named -v 2>/dev/null | awk '{print $2}'), PowerDNS $(pdns_server --version 2>&1 | grep -o 'Server [0-9.]*' | head -1 | cut -d' ' -f2), $(dnsperf -h 2>&1 | grep Version)"
} >"$OUT/meta.txt"
resargs=()
((RES_WORKLOADS)) && resargs=(-resolver "$RESTSV" -mixfile "$DATA/resolver/res-mix.txt")
nser=$("$BT" report -raw "$RAW" -servers "$SRV" -errors "$ERRLOG" -meta "$OUT/meta.txt" -order "$WORKLOADS" "${resargs[@]}" -out "$OUT")
if command -v gnuplot >/dev/null && [[ -n $nser ]]; then
	gnuplot -e "datadir='$OUT'; outfile='$OUT/results.png'; ncol=$nser" "$HERE/plot.gp" 2>"$OUT/gnuplot.log" ||
		loud "gnuplot failed: $(head -3 "$OUT/gnuplot.log")"
fi

cat "$OUT/results.md"
echo
echo "results: $OUT/results.md  chart: $OUT/results.png  raw: $RAW"
if [[ -s $ERRLOG ]]; then
	echo "!!! $(wc -l <"$ERRLOG") ERROR(S) - see the Errors section above and $ERRLOG" >&2
	exit 1
fi
exit 0
}
