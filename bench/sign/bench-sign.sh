#!/usr/bin/env bash
# bench/sign/bench-sign.sh - time offline zone signing: `tern zone sign`
# against BIND's dnssec-signzone and ldns-signzone, with the same keys, the
# same algorithm and the same chain type, each allowed 2 cores where it can
# use them (dnssec-signzone -n 2; ldns-signzone is single-threaded; tern
# uses GOMAXPROCS, pinned to 2 CPUs with taskset when available).
#
# Why: "fast" should be a number next to the peers'. Wall time on a shared
# machine is noisy, so CPU time (user+sys) is printed as well.
#
# Usage: bash bench/sign/bench-sign.sh [RECORDS] [ALGORITHM] [nsec|nsec3]
#   RECORDS    records in the generated zone (1000000)
#   ALGORITHM  ecdsap256sha256 (default) or ed25519
#   MODE       nsec (default) or nsec3 (RFC 9276: 0 iterations, no salt)
# Environment: TOOLS="tern bind ldns" (which to run), VERIFY=1 (check every
# output with ldns-verify-zone), KEEP=1 (keep the work directory).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
N=${1:-1000000}
ALG=${2:-ecdsap256sha256}
MODE=${3:-nsec}
TOOLS=${TOOLS:-tern bind ldns}
ORIGIN=bench.test
WORK=$(mktemp -d /tmp/tern-bench-sign.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN=(taskset -c 0,1); fi

echo "# zone: $N records, $ALG, $MODE; work dir $WORK" >&2
"$HERE/gen-zone.sh" "$ORIGIN" "$N" >"$WORK/zone"
(cd "$REPO" && go build -o "$WORK/tern" ./cmd/tern)

# Keys: let tern create them once; the other signers use the same files.
mkdir -p "$WORK/keys"
head -5 "$WORK/zone" >"$WORK/tiny.zone"
"$WORK/tern" zone sign "$WORK/tiny.zone" --origin "$ORIGIN" --key-dir "$WORK/keys" --algorithm "$ALG" >/dev/null
KSK=$(grep -l 'DNSKEY[[:space:]]*257' "$WORK"/keys/*.key | head -1)
ZSK=$(grep -l 'DNSKEY[[:space:]]*256' "$WORK"/keys/*.key | head -1)
KSK=${KSK%.key}
ZSK=${ZSK%.key}

TERN_FLAGS=()
BIND_FLAGS=()
LDNS_FLAGS=()
if [ "$MODE" = nsec3 ]; then
	TERN_FLAGS=(--nsec3)
	BIND_FLAGS=(-3 - -H 0)
	LDNS_FLAGS=(-n -t 0 -s "")
fi

# run NAME OUT CMD...: time one signer, print "NAME wall cpu records".
run() {
	local name=$1 out=$2
	shift 2
	/usr/bin/time -f "%e %U %S" -o "$WORK/time.$name" "$@" >"$WORK/log.$name" 2>&1 || {
		echo "$name failed:" >&2
		tail -5 "$WORK/log.$name" >&2
		return 0
	}
	read -r wall user sys <"$WORK/time.$name"
	local recs
	recs=$(grep -vc '^[[:space:]]*\(;\|$\)' "$out" || true)
	printf '%-16s %8.2f s wall %8.2f s cpu %10d records out\n' "$name" "$wall" "$(echo "$user + $sys" | bc)" "$recs"
	if [ "${VERIFY:-0}" = 1 ]; then
		if ldns-verify-zone "$out" >/dev/null 2>"$WORK/verify.$name"; then
			echo "                 verified by ldns-verify-zone"
		else
			echo "                 ldns-verify-zone FAILED: $(head -2 "$WORK/verify.$name")"
		fi
	fi
}

for t in $TOOLS; do
	case $t in
	tern)
		run tern "$WORK/out.tern" sh -c "\"\$@\" >\"$WORK/out.tern\"" sh \
			"${PIN[@]}" "$WORK/tern" zone sign "$WORK/zone" --origin "$ORIGIN" --key-dir "$WORK/keys" \
			--algorithm "$ALG" "${TERN_FLAGS[@]}"
		;;
	bind)
		# -P: no post-sign verification (tern does none either); -x: only
		# the KSK signs DNSKEY, as tern; -N keep: leave the serial alone.
		# BIND wants the DNSKEYs in the zone file.
		cat "$WORK/zone" "$KSK.key" "$ZSK.key" >"$WORK/zone.bind"
		run dnssec-signzone "$WORK/out.bind" "${PIN[@]}" dnssec-signzone -P -x -n 2 -N keep -q -d "$WORK" \
			-O full -o "$ORIGIN" -f "$WORK/out.bind" "${BIND_FLAGS[@]}" -k "$KSK" "$WORK/zone.bind" "$ZSK"
		;;
	ldns)
		run ldns-signzone "$WORK/out.ldns" "${PIN[@]}" ldns-signzone "${LDNS_FLAGS[@]}" \
			-o "$ORIGIN" -f "$WORK/out.ldns" "$WORK/zone" "$KSK" "$ZSK"
		;;
	*) echo "unknown tool $t" >&2 ;;
	esac
done
