# shellcheck shell=bash
# bench/lib/servers.sh - how the harness starts each DNS server.
#
# Sourced by bench/run.sh (and, for Knot and NSD, by
# bench/manyzones/bench-manyzones.sh and bench/xfr/bench-xfr.sh). One
# function per server:
#
#   start_<name> WORKDIR PORT ZONE...      ZONE is ORIGIN=FILE (absolute path)
#
# Each writes a throw-away config into WORKDIR, starts the server in the
# foreground (so its PID is the process the harness measures) pinned to
# CPU 0 (PIN, bench/lib/common.sh) with one worker, listening on
# 127.0.0.1:PORT only, and prints the PID in STARTED_PID (no subshell, so
# run.sh stays its parent and can wait for it). The server's
# stdout/stderr go to WORKDIR/log. NSD's and Knot's two halves are
# functions of their own (nsd_conf and nsd_run, knot_conf and knot_run),
# so that a benchmark timing the start can write the config first.
#
# Every config is written so that the server sends no traffic anywhere:
# no NOTIFY (BIND would notify the root zone's real NS hosts), no
# recursion, no security polling (PowerDNS), no zone transfers.

# shellcheck disable=SC2034 # STARTED_PID is for the callers
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# zone_origin ZONE / zone_file ZONE: split ORIGIN=FILE.
zone_origin() { printf '%s' "${1%%=*}"; }
zone_file() { printf '%s' "${1#*=}"; }

# nsd_conf WORKDIR PORT ZONE...: WORKDIR/nsd.conf. The zones' entries
# are written without a command substitution per zone: the many-zones
# benchmark lists 100,000.
nsd_conf() {
	local dir=$1 port=$2 z
	shift 2
	{
		cat <<-EOF
		server:
		  ip-address: 127.0.0.1@$port
		  port: $port
		  server-count: 1
		  do-ip6: no
		  username: ""
		  chroot: ""
		  database: ""
		  zonesdir: "$dir"
		  pidfile: "$dir/nsd.pid"
		  xfrdfile: "$dir/xfrd.state"
		  zonelistfile: "$dir/zone.list"
		  logfile: "$dir/nsd.log"
		  verbosity: 1
		  zonefiles-check: no
		  # Response rate limiting is on by default (200 qps per /24): a
		  # benchmark from one address would measure the limiter.
		  rrl-ratelimit: 0
		  rrl-whitelist-ratelimit: 0
		remote-control:
		  control-enable: no
		EOF
		for z in "$@"; do
			printf 'zone:\n  name: "%s"\n  zonefile: "%s"\n' "${z%%=*}" "${z#*=}"
		done
	} >"$dir/nsd.conf"
}

# nsd_run WORKDIR: NSD on WORKDIR/nsd.conf.
nsd_run() {
	"${PIN[@]}" nsd -d -c "$1/nsd.conf" >"$1/log" 2>&1 &
	STARTED_PID=$!
}

start_nsd() {
	nsd_conf "$@"
	nsd_run "$1"
}

# knot_head WORKDIR PORT: the server, database, control and log sections
# of a knot.conf in WORKDIR, listening on 127.0.0.1@PORT with one worker
# of each kind (bench-xfr.sh adds its keys, remotes and ACLs to it).
knot_head() {
	cat <<-EOF
	server:
	  rundir: "$1"
	  listen: 127.0.0.1@$2
	  udp-workers: 1
	  tcp-workers: 1
	  background-workers: 1
	database:
	  storage: "$1/db"
	control:
	  listen: "$1/knot.sock"
	log:
	  - target: stderr
	    any: notice
	EOF
}

# knot_conf WORKDIR PORT ZONE...: WORKDIR/knot.conf serving the zones from
# their files, never writing them back, with no journal.
knot_conf() {
	local dir=$1 port=$2 z
	shift 2
	{
		knot_head "$dir" "$port"
		cat <<-EOF
		template:
		  - id: default
		    storage: "$dir"
		    zonefile-sync: -1
		    zonefile-load: whole
		    journal-content: none
		    semantic-checks: off
		zone:
		EOF
		for z in "$@"; do
			printf '  - domain: "%s"\n    file: "%s"\n' "${z%%=*}" "${z#*=}"
		done
	} >"$dir/knot.conf"
}

# knot_run WORKDIR: knotd on WORKDIR/knot.conf.
knot_run() {
	"${PIN[@]}" knotd -c "$1/knot.conf" >"$1/log" 2>&1 &
	STARTED_PID=$!
}

start_knot() {
	knot_conf "$@"
	knot_run "$1"
}

start_bind() {
	local dir=$1 port=$2; shift 2
	{
		cat <<-EOF
		options {
		  directory "$dir";
		  pid-file "$dir/named.pid";
		  session-keyfile "$dir/session.key";
		  managed-keys-directory "$dir";
		  listen-on port $port { 127.0.0.1; };
		  listen-on-v6 { none; };
		  recursion no;
		  notify no;
		  allow-transfer { none; };
		  dnssec-validation no;
		  automatic-interface-scan no;
		};
		controls { };
		EOF
		for z in "$@"; do
			printf 'zone "%s" { type primary; file "%s"; };\n' "$(zone_origin "$z")" "$(zone_file "$z")"
		done
	} >"$dir/named.conf"
	# -g: foreground, log to stderr; -n 1: one worker thread.
	"${PIN[@]}" named -g -n 1 -c "$dir/named.conf" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

start_pdns() {
	local dir=$1 port=$2; shift 2
	for z in "$@"; do
		printf 'zone "%s" { type master; file "%s"; };\n' "$(zone_origin "$z")" "$(zone_file "$z")"
	done >"$dir/named.conf"
	cat >"$dir/pdns.conf" <<-EOF
	launch=bind
	bind-config=$dir/named.conf
	bind-dnssec-db=$dir/bind-dnssec.db
	local-address=127.0.0.1
	local-port=$port
	receiver-threads=1
	distributor-threads=1
	daemon=no
	guardian=no
	socket-dir=$dir
	disable-syslog=yes
	loglevel=4
	security-poll-suffix=
	webserver=no
	api=no
	primary=no
	secondary=no
	EOF
	# The root zone is pre-signed: tell PowerDNS so, or it would not serve
	# its RRSIGs/NSECs to DO queries. The marks live in a small SQLite db.
	rm -f "$dir/bind-dnssec.db"
	pdnsutil --config-dir="$dir" create-bind-db "$dir/bind-dnssec.db" >>"$dir/log" 2>&1
	for z in "$@"; do
		if grep -q -m1 'RRSIG' "$(zone_file "$z")"; then
			pdnsutil --config-dir="$dir" set-presigned "$(zone_origin "$z")" >>"$dir/log" 2>&1
		fi
	done
	"${PIN[@]}" pdns_server --config-dir="$dir" >>"$dir/log" 2>&1 &
	STARTED_PID=$!
}

start_tern() {
	local dir=$1 port=$2; shift 2
	local args=()
	for z in "$@"; do
		args+=(--zone "$z")
	done
	"${PIN[@]}" "$BIN/tern" serve --listen "127.0.0.1:$port" "${args[@]}" --workers 1 >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

start_echo() {
	local dir=$1 port=$2
	"${PIN[@]}" "$BIN/echo" 127.0.0.1 "$port" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

# start_echosz: the echo floor padding every reply to ECHO_SIZE bytes, the
# average size of Tern's answers in the workload being measured.
start_echosz() {
	local dir=$1 port=$2
	"${PIN[@]}" "$BIN/echo" 127.0.0.1 "$port" "$ECHO_SIZE" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

# --- the resolver phase ------------------------------------------------------
#
#   start_res_<name> WORKDIR PORT          RES_HINTS: the local root hints
#
# Resolvers listen on 127.0.0.1:PORT, iterate from the local hierarchy's
# root hints (loopback addresses on port 53: querying loopback allowed),
# one thread, pinned to CPU 0, DNSSEC validation off (on from the DS file
# RES_ANCHOR when it is set: the resolver-v phase, aggressive NSEC off in
# all three, see run.sh), caches large enough
# for the whole workload (256 MiB of RRsets for Unbound, as Tern's default
# cache-size; two million entries for PowerDNS). They never see a real
# root server: the hints are the harness's own file.

# res_unbound_validation: Unbound's module-config (and trust anchor) lines.
res_unbound_validation() {
	if [[ -z ${RES_ANCHOR:-} ]]; then
		echo 'module-config: "iterator"'
		return
	fi
	printf 'module-config: "validator iterator"\n  trust-anchor-file: "%s"\n  aggressive-nsec: no\n' "$RES_ANCHOR"
}

start_res_unbound() {
	local dir=$1 port=$2
	cat >"$dir/unbound.conf" <<-EOF
	server:
	  interface: 127.0.0.1@$port
	  port: $port
	  num-threads: 1
	  do-ip6: no
	  do-daemonize: no
	  username: ""
	  chroot: ""
	  directory: "$dir"
	  pidfile: "$dir/unbound.pid"
	  use-syslog: no
	  logfile: ""
	  verbosity: 1
	  root-hints: "$RES_HINTS"
	  # the hierarchy's authorities are on 127.0.0.0/8
	  do-not-query-localhost: no
	  access-control: 127.0.0.0/8 allow
	  $(res_unbound_validation)
	  msg-cache-size: 128m
	  rrset-cache-size: 256m
	  so-rcvbuf: 4m
	  so-sndbuf: 4m
	  extended-statistics: yes
	remote-control:
	  control-enable: yes
	  control-interface: "$dir/unbound.ctl"
	  control-use-cert: no
	EOF
	"${PIN[@]}" unbound -d -c "$dir/unbound.conf" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

# res_pdnsrec_validation DIR: PowerDNS Recursor's dnssec setting (and its
# trust anchor, in DIR/anchors.lua).
res_pdnsrec_validation() {
	if [[ -z ${RES_ANCHOR:-} ]]; then
		echo "dnssec=off"
		return
	fi
	{
		echo "clearTA('.')"
		awk '$4 == "DS" {printf "addTA(\".\", \"%s %s %s %s\")\n", $5, $6, $7, $8}' "$RES_ANCHOR"
	} >"$1/anchors.lua"
	printf 'dnssec=validate\nlua-config-file=%s\naggressive-nsec-cache-size=0\n' "$1/anchors.lua"
}

start_res_pdnsrec() {
	local dir=$1 port=$2
	cat >"$dir/recursor.conf" <<-EOF
	local-address=127.0.0.1
	local-port=$port
	threads=1
	pdns-distributes-queries=no
	hint-file=$RES_HINTS
	# the hierarchy's authorities are on 127.0.0.0/8, which dont-query
	# lists by default
	dont-query=
	allow-from=127.0.0.0/8
	$(res_pdnsrec_validation "$dir")
	daemon=no
	socket-dir=$dir
	security-poll-suffix=
	disable-syslog=yes
	quiet=yes
	max-cache-entries=2000000
	max-packetcache-entries=2000000
	webserver=no
	EOF
	"${PIN[@]}" pdns_recursor --config-dir="$dir" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

# ternres_supported: does this tern serve resolve (tern serve --resolver)?
ternres_supported() {
	local help
	help=$("$BIN/tern" serve -h 2>&1 || true)
	grep -qE '^ +-resolver\b' <<<"$help"
}

# res_tern_validation: Tern's validation lines (on by default).
res_tern_validation() {
	if [[ -z ${RES_ANCHOR:-} ]]; then
		echo "validation = false"
		return
	fi
	printf 'validation = true\ntrust-anchor = "%s"\naggressive-nsec = false\n' "$RES_ANCHOR"
}

start_res_tern() {
	local dir=$1 port=$2
	cat >"$dir/tern.toml" <<-EOF
	[server]
	workers = 1
	# its own control socket: tern ctl stats reads the resolver's
	# counters and cache sizes after a mix run (res_stats)
	control = "$dir/ctl.sock"
	# Caches sized to hold the workload, as the peers' are: the default
	# 8192 responses per worker hold less than res-hits' 10,000 questions,
	# and a cache that cycles through more keys than it holds misses
	# every time (22 us of CPU per hit instead of 5, measured). 131072
	# (the most it takes) holds all of the full res-mix's 62,181
	# questions, as Unbound's 128 MB message cache does; 65536 held 94%
	# of them, 32768 53% (the full mix then hit 83.5% against Unbound's
	# 87.6%). Its sets take 8 bytes per configured response (1 MiB),
	# resident once a few thousand responses spread over them, its ring
	# what it holds: both are in the mix's memory growth.
	response-cache = 131072

	[resolver]
	listen = ["127.0.0.1:$port"]
	allow = ["127.0.0.0/8"]
	root-hints = "$RES_HINTS"
	# the hierarchy's authorities are on 127.0.0.0/8
	query-loopback = true
	$(res_tern_validation)
	# all the load comes from one address: the default 32 waiting queries
	# per client (against DNSBomb) would drop most of the generator's 100
	# outstanding; Unbound and PowerDNS Recursor have no such limit on
	max-per-client = 1024
	EOF
	"${PIN[@]}" "$BIN/tern" serve -c "$dir/tern.toml" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

# res_stats NAME WORKDIR: the resolver's own counters, as
#   QUERIES HITS RRSETS NEGATIVE MESSAGES CACHE_BYTES
# (client queries, those answered from the cache, RRsets cached,
# negative entries, whole responses cached, the bytes the server says its
# caches hold), "-" for what the server does not tell.
# Unbound: total.num.queries, total.num.cachehits (its message cache's
# hits), rrset.cache.count, -, msg.cache.count (negative answers are
# there), mem.cache.rrset + mem.cache.message.
# PowerDNS Recursor: questions, packetcache-hits + cache-hits,
# cache-entries (its record cache), negcache-entries,
# packetcache-entries, cache-bytes + packetcache-bytes.
# Tern (tern ctl --json stats): queries.resolver, cache_hits (its
# workers' response caches' hits), resolver_cache.rrsets, .negative,
# .responses, .bytes + .response_bytes. The whole output is kept in
# WORKDIR/stats.txt.
res_stats() {
	local s=$1 dir=$2 out
	case $s in
	unbound)
		out=$(unbound-control -c "$dir/unbound.conf" stats_noreset 2>/dev/null) || { echo "- - - - - -"; return; }
		printf '%s\n' "$out" >"$dir/stats.txt"
		awk -F= '$1=="total.num.queries"{q=$2} $1=="total.num.cachehits"{h=$2} $1=="rrset.cache.count"{r=$2}
			$1=="msg.cache.count"{m=$2} $1=="mem.cache.rrset"{br=$2} $1=="mem.cache.message"{bm=$2}
			END{print (q==""?"-":q), (h==""?"-":h), (r==""?"-":r), "-", (m==""?"-":m), (br==""||bm==""?"-":br+bm)}' <<<"$out"
		;;
	pdnsrec)
		out=$(rec_control --socket-dir="$dir" get-all 2>/dev/null) || { echo "- - - - - -"; return; }
		printf '%s\n' "$out" >"$dir/stats.txt"
		awk '$1=="questions"{q=$2} $1=="packetcache-hits"{p=$2} $1=="cache-hits"{c=$2} $1=="cache-entries"{r=$2}
			$1=="negcache-entries"{n=$2} $1=="packetcache-entries"{m=$2} $1=="cache-bytes"{br=$2} $1=="packetcache-bytes"{bm=$2}
			END{print (q==""?"-":q), (p==""?"-":p+c), (r==""?"-":r), (n==""?"-":n), (m==""?"-":m), (br==""||bm==""?"-":br+bm)}' <<<"$out"
		;;
	tern)
		out=$("$BIN/tern" ctl -c "$dir/tern.toml" --json stats 2>/dev/null) || { echo "- - - - - -"; return; }
		printf '%s\n' "$out" >"$dir/stats.txt"
		jq -r '[.queries.resolver, .cache_hits] + (if .resolver_cache then
				[.resolver_cache.rrsets, .resolver_cache.negative, .resolver_cache.responses, .resolver_cache.bytes + .resolver_cache.response_bytes]
				else ["-", "-", "-", "-"] end) | map(tostring) | join(" ")' <<<"$out" 2>/dev/null || echo "- - - - - -"
		;;
	*) echo "- - - - - -" ;;
	esac
}

# start_authorities ARGDIR: the local hierarchy's authorities, one tern
# serve per level (root, TLDs, second-level zones), each on its loopback
# addresses at port 53, as listed by `benchtool resgen` in ARGDIR/auth-*.args.
# They run on the generator's CPU (AUTH_CPU), away from the resolver being
# measured, with one worker per address, and with GOMAXPROCS=1
# (AUTH_GOMAXPROCS), as every resolver run before 14a8785 had them:
# tern serve's own floor (one P more than its 17 workers) made the
# res-mix 5-12% slower for Tern in three interleaved pairs (e8972c9's
# resolver, load 3-4), the authorities sharing their CPU with dnsperf.
# Sets AUTH_PIDS.
AUTH_PIDS=()
start_authorities() {
	local d=$1 a args
	AUTH_PIDS=()
	for a in root tld sld; do
		mapfile -t args <"$d/auth-$a.args"
		GOMAXPROCS=${AUTH_GOMAXPROCS:-1} taskset -c "$AUTH_CPU" ${AUTH_FIFO:+chrt -f 1} "$BIN/tern" serve "${args[@]}" --workers 1 --log-level warn >"$d/auth-$a.log" 2>&1 &
		AUTH_PIDS+=($!)
	done
}
