# bench/lib/servers.sh - how the harness starts each DNS server.
#
# Sourced by bench/run.sh. One function per server:
#
#   start_<name> WORKDIR PORT ZONE...      ZONE is ORIGIN=FILE (absolute path)
#
# Each writes a throw-away config into WORKDIR, starts the server in the
# foreground (so its PID is the process the harness measures) pinned to
# CPU 0 with one worker, listening on 127.0.0.1:PORT only, and prints the
# PID in STARTED_PID (no subshell, so run.sh stays its parent and can
# wait for it). The server's stdout/stderr go to WORKDIR/log.
#
# Every config is written so that the server sends no traffic anywhere:
# no NOTIFY (BIND would notify the root zone's real NS hosts), no
# recursion, no security polling (PowerDNS), no zone transfers.

SERVER_CPU=${SERVER_CPU:-0}

# zone_origin ZONE / zone_file ZONE: split ORIGIN=FILE.
zone_origin() { printf '%s' "${1%%=*}"; }
zone_file() { printf '%s' "${1#*=}"; }

start_nsd() {
	local dir=$1 port=$2; shift 2
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
			printf 'zone:\n  name: "%s"\n  zonefile: "%s"\n' "$(zone_origin "$z")" "$(zone_file "$z")"
		done
	} >"$dir/nsd.conf"
	taskset -c "$SERVER_CPU" nsd -d -c "$dir/nsd.conf" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

start_knot() {
	local dir=$1 port=$2; shift 2
	{
		cat <<-EOF
		server:
		  rundir: "$dir"
		  listen: 127.0.0.1@$port
		  udp-workers: 1
		  tcp-workers: 1
		  background-workers: 1
		database:
		  storage: "$dir/db"
		control:
		  listen: "$dir/knot.sock"
		log:
		  - target: stderr
		    any: notice
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
			printf '  - domain: "%s"\n    file: "%s"\n' "$(zone_origin "$z")" "$(zone_file "$z")"
		done
	} >"$dir/knot.conf"
	taskset -c "$SERVER_CPU" knotd -c "$dir/knot.conf" >"$dir/log" 2>&1 &
	STARTED_PID=$!
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
	taskset -c "$SERVER_CPU" named -g -n 1 -c "$dir/named.conf" >"$dir/log" 2>&1 &
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
	taskset -c "$SERVER_CPU" pdns_server --config-dir="$dir" >>"$dir/log" 2>&1 &
	STARTED_PID=$!
}

start_tern() {
	local dir=$1 port=$2; shift 2
	local args=()
	for z in "$@"; do
		args+=(--zone "$z")
	done
	taskset -c "$SERVER_CPU" "$BIN/tern" serve --listen "127.0.0.1:$port" "${args[@]}" --workers 1 >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

start_echo() {
	local dir=$1 port=$2
	taskset -c "$SERVER_CPU" "$BIN/echo" 127.0.0.1 "$port" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}

# start_echosz: the echo floor padding every reply to ECHO_SIZE bytes, the
# average size of Tern's answers in the workload being measured.
start_echosz() {
	local dir=$1 port=$2
	taskset -c "$SERVER_CPU" "$BIN/echo" 127.0.0.1 "$port" "$ECHO_SIZE" >"$dir/log" 2>&1 &
	STARTED_PID=$!
}
