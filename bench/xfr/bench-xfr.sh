#!/usr/bin/env bash
# bench/xfr/bench-xfr.sh - zone transfers of a large zone, Tern beside Knot.
#
#   out  Tern, then Knot, serves the zone; kdig takes it by AXFR, unsigned
#        and TSIG-signed (kdig checks every message's MAC). Per transfer:
#        records received, wall time, the server's CPU time, and the
#        memory the transfer took (the server's peak RSS during it, less
#        its RSS before: /proc/PID/clear_refs resets the peak).
#   in   a Knot primary (on CPU 1, so that the secondary's work does not
#        slow it) serves the zone; a secondary started empty (Tern, then
#        Knot) takes it by AXFR, stores it and serves it. Per start: the
#        time until it answers the primary's serial, its CPU time, its peak
#        and final RSS. A transfer that fails is retried by the secondary
#        (Tern after 30 s): the wall time shows it.
#
# Servers run pinned to CPU 0 with one worker of each kind (as bench/run.sh
# runs them), kdig and the polling on CPU 1, everything on 127.0.0.1.
# Wall time on a shared machine is noisy: CPU time is printed beside it.
#
# Usage: bash bench/xfr/bench-xfr.sh [RECORDS]   (1000000; make bench QUICK=1: 100000)
# Environment: REPS (3), PHASES ("out in"), BENCH_PORT_BASE (25300: ports +20..+22), KEEP=1
# (keep the work directory), TERN_BIN (a ready tern binary).
set -euo pipefail
export PATH="$PATH:/usr/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench/lib/servers.sh
source "$HERE/../lib/servers.sh"
N=${1:-1000000}
REPS=${REPS:-3}
PHASES=${PHASES:-out in}
PORT_BASE=${BENCH_PORT_BASE:-25300}
P_PRIMARY=$((PORT_BASE + 20)) P_TERN=$((PORT_BASE + 21)) P_KNOT=$((PORT_BASE + 22))
ORIGIN=xfr.test
SECRET=c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ==
bench_work xfr

for p in $P_PRIMARY $P_TERN $P_KNOT; do port_free "$p" || exit 1; done
command -v knotd >/dev/null && command -v kdig >/dev/null || {
	echo "knotd and kdig are needed (Debian: knot, knot-dnsutils)" >&2
	exit 1
}

echo "# zone transfers: $N records ($ORIGIN), $REPS repeats; work dir $WORK" >&2
"$HERE/../sign/gen-zone.sh" "$ORIGIN" "$N" >"$WORK/zone"
RECORDS=$(grep -vc '^\$' "$WORK/zone")
tern_binary "$WORK/tern"

# kb PID FIELD: a /proc/PID/status field in kB (VmRSS, VmHWM).
kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# serial PORT: the SOA serial served on PORT, or nothing.
serial() { "${OPIN[@]}" kdig @127.0.0.1 -p "$1" +short +timeout=1 +retry=0 "$ORIGIN" SOA 2>/dev/null | awk '{print $3}'; }
WANT=$(awk '$2 == "IN" && $3 == "SOA" {print $6; exit}' "$WORK/zone")

# wait_serial PORT PID: wait until PORT serves the zone's serial (at most
# 10 minutes); false if PID died or it never did.
wait_serial() { wait_for "$2" 6000 0.1 "$WANT" serial "$1"; }

# tern_head DATADIR: the [server] table of Tern's configs, one worker on
# P_TERN, no control socket.
tern_head() {
	cat <<-EOF
	[server]
	listen = ["127.0.0.1:$P_TERN"]
	workers = 1
	data-dir = "$1"
	control = ""
	EOF
}

tern_primary() {
	{
		tern_head "$WORK/tern-out-data"
		cat <<-EOF
		[[key]]
		name = "xfr"
		algorithm = "hmac-sha256"
		secret = "$SECRET"
		[[acl]]
		name = "local"
		address = ["127.0.0.0/8"]
		action = ["transfer"]
		[[acl]]
		name = "key"
		key = ["xfr"]
		action = ["transfer"]
		[[zone]]
		origin = "$ORIGIN"
		file = "$WORK/zone"
		acl = ["local", "key"]
		EOF
	} >"$WORK/tern-out.toml"
	"${PIN[@]}" "$WORK/tern" serve -c "$WORK/tern-out.toml" >"$WORK/tern-out.log" 2>&1 &
	STARTED=$!
}

# xfr_knot DIR PORT ZONECLAUSE [other]: knotd on a DIR/knot.conf with the
# key, the primary and the ACLs, listening on PORT, pinned to CPU 0 (PIN),
# or with "other" to the other CPU (OPIN); STARTED.
xfr_knot() {
	mkdir -p "$1"
	{
		knot_head "$1" "$2"
		cat <<-EOF
		key:
		  - id: xfr
		    algorithm: hmac-sha256
		    secret: $SECRET
		remote:
		  - id: primary
		    address: 127.0.0.1@$P_PRIMARY
		acl:
		  - id: local
		    address: 127.0.0.0/8
		    action: transfer
		  - id: key
		    key: xfr
		    action: transfer
		template:
		  - id: default
		    storage: "$1"
		    semantic-checks: off
		zone:
		EOF
		printf '%s\n' "$3"
	} >"$1/knot.conf"
	local PIN=("${PIN[@]}")
	[ -z "${4:-}" ] || PIN=("${OPIN[@]}")
	knot_run "$1"
	STARTED=$STARTED_PID
}

printf '%s\n' "direction	server	mode	rep	records	wall_ms	server_cpu_s	mem_kb" >"$WORK/raw.tsv"

# --- out: the server sends, kdig receives ----------------------------------
out_runs() { # out_runs NAME PORT PID
	local name=$1 port=$2 pid=$3 mode rep a b t0 t1 n rss hwm y
	for mode in plain tsig; do
		for rep in $(seq "$REPS"); do
			y=()
			[ "$mode" = tsig ] && y=(-y "hmac-sha256:xfr:$SECRET")
			rss=$(kb "$pid" VmRSS)
			echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || true
			a=$(cpu "$pid")
			t0=$(now)
			n=$("${OPIN[@]}" kdig @127.0.0.1 -p "$port" "${y[@]}" +noall +answer "$ORIGIN" AXFR 2>"$WORK/kdig.err" | grep -c . || true)
			t1=$(now)
			b=$(cpu "$pid")
			hwm=$(kb "$pid" VmHWM)
			if grep -qi 'fail\|error\|warning' "$WORK/kdig.err"; then
				echo "!!! $name $mode: kdig: $(head -2 "$WORK/kdig.err" | tr '\n' ' ')" >&2
			fi
			printf 'out\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$rep" "$n" "$(ms "$t0" "$t1")" \
				"$(secs $((b - a)))" "$((hwm - rss))" >>"$WORK/raw.tsv"
			echo "  out $name $mode #$rep: $n records, $(ms "$t0" "$t1") ms, server CPU $(secs $((b - a))) s, +$((hwm - rss)) kB" >&2
		done
	done
}

if [[ " $PHASES " == *" out "* ]]; then
echo "# out: Tern ($TERN_REV)" >&2
tern_primary
track "$STARTED"
wait_serial "$P_TERN" "$STARTED" || { echo "tern did not serve the zone: $(tail -3 "$WORK/tern-out.log")" >&2; exit 1; }
out_runs tern "$P_TERN" "$STARTED"
stop "$STARTED"

echo "# out: Knot $(knotd -V 2>&1 | awk '{print $NF}')" >&2
xfr_knot "$WORK/knot-out" "$P_KNOT" "$(printf '  - domain: %s\n    file: %s\n    zonefile-sync: -1\n    journal-content: none\n    acl: [local, key]' "$ORIGIN" "$WORK/zone")"
track "$STARTED"
wait_serial "$P_KNOT" "$STARTED" || { echo "knot did not serve the zone: $(tail -3 "$WORK/knot-out/log")" >&2; exit 1; }
out_runs knot "$P_KNOT" "$STARTED"
stop "$STARTED"
fi

# --- in: a Knot primary sends, the secondary receives -----------------------
if [[ " $PHASES " == *" in "* ]]; then
echo "# in: from a Knot primary" >&2
xfr_knot "$WORK/knot-primary" "$P_PRIMARY" "$(printf '  - domain: %s\n    file: %s\n    zonefile-sync: -1\n    journal-content: none\n    acl: [local]' "$ORIGIN" "$WORK/zone")" other
PRIMARY=$STARTED
track "$PRIMARY"
wait_serial "$P_PRIMARY" "$PRIMARY" || { echo "the knot primary did not serve the zone" >&2; exit 1; }

in_run() { # in_run NAME PORT REP (STARTED: the secondary, started at T0)
	local name=$1 port=$2 rep=$3 t1 c
	if ! wait_serial "$port" "$STARTED"; then
		echo "!!! in $name #$rep: the secondary never served serial $WANT" >&2
		stop "$STARTED"
		return
	fi
	t1=$(now)
	c=$(cpu "$STARTED")
	printf 'in\t%s\tplain\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rep" "$RECORDS" "$(ms "$T0" "$t1")" "$(secs "$c")" \
		"$(kb "$STARTED" VmHWM)/$(kb "$STARTED" VmRSS)" >>"$WORK/raw.tsv"
	echo "  in $name #$rep: $(ms "$T0" "$t1") ms, CPU $(secs "$c") s, peak/final RSS $(kb "$STARTED" VmHWM)/$(kb "$STARTED" VmRSS) kB" >&2
	stop "$STARTED"
}

for rep in $(seq "$REPS"); do
	rm -rf "$WORK/tern-in-data"
	{
		tern_head "$WORK/tern-in-data"
		cat <<-EOF
		[[remote]]
		name = "primary"
		address = ["127.0.0.1:$P_PRIMARY"]
		[[zone]]
		origin = "$ORIGIN"
		primary = ["primary"]
		EOF
	} >"$WORK/tern-in.toml"
	T0=$(now)
	"${PIN[@]}" "$WORK/tern" serve -c "$WORK/tern-in.toml" >"$WORK/tern-in.log" 2>&1 &
	STARTED=$!
	track "$STARTED"
	in_run tern "$P_TERN" "$rep"

	rm -rf "$WORK/knot-in"
	T0=$(now)
	xfr_knot "$WORK/knot-in" "$P_KNOT" "$(printf '  - domain: %s\n    file: %s\n    master: primary' "$ORIGIN" "$WORK/knot-in/$ORIGIN.zone")"
	track "$STARTED"
	in_run knot "$P_KNOT" "$rep"
done
fi

# --- report: medians per direction, server, mode ----------------------------
echo
echo "Zone transfers of $RECORDS records (gen-zone.sh $N), $REPS repeats, medians (min-max); tern $TERN_REV, $(knotd -V 2>&1 | head -1)"
echo "out: kdig takes the zone by AXFR; mem = the server's peak RSS during the transfer less its RSS before"
echo "in: a secondary started empty until it serves the primary's (Knot's) serial; mem = peak/final RSS"
echo
printf '%-4s %-5s %-6s %9s %18s %22s %24s\n' dir server mode records "wall ms" "server CPU s" "mem kB"
awk -F'\t' 'NR > 1 {
	k = $1 " " $2 " " $3
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	recs[k] = $5; w[k] = w[k] " " $6; c[k] = c[k] " " $7; m[k] = m[k] " " $8
}
function med(s,    a, i, j, t, cnt) {
	cnt = split(s, a, " ")
	for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return sprintf("%s (%s-%s)", a[int((cnt + 1) / 2)], a[1], a[cnt])
}
function medm(s,    a, cnt) { cnt = split(s, a, " "); if (index(a[1], "/")) return a[int((cnt + 1) / 2)]; return med(s) }
END { for (i = 1; i <= n; i++) { k = order[i]; split(k, p, " "); printf "%-4s %-5s %-6s %9s %18s %22s %24s\n", p[1], p[2], p[3], recs[k], med(w[k]), med(c[k]), medm(m[k]) } }' "$WORK/raw.tsv"
