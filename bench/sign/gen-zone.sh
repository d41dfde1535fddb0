#!/bin/sh
# gen-zone.sh ORIGIN N: print a zone of about N records: hosts with A/AAAA,
# MX and TXT records, delegations (one in ten with DS) with glue, and
# names under empty non-terminals, so the chain and cut logic is exercised.
set -eu
origin=${1:?usage: gen-zone.sh ORIGIN N}
n=${2:?usage: gen-zone.sh ORIGIN N}
awk -v origin="$origin" -v n="$n" 'BEGIN {
	printf "$ORIGIN %s.\n$TTL 3600\n", origin
	printf "@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 300\n@ NS ns1\n@ NS ns2\nns1 A 192.0.2.1\nns2 A 192.0.2.2\n"
	c = 5; i = 0
	while (c < n) {
		i++
		m = i % 20
		if (m < 12) { printf "h%d A 10.%d.%d.%d\n", i, int(i/65536)%256, int(i/256)%256, i%256; c++ }
		else if (m < 14) { printf "h%d AAAA 2001:db8::%x\nh%d TXT \"v=spf1 -all %d\"\n", i, i%65536, i, i; c += 2 }
		else if (m < 16) { printf "m%d MX 10 h%d\n", i, i-1; c++ }
		else if (m < 18) { printf "a.e%d A 10.1.%d.%d\n", i, int(i/256)%256, i%256; c++ }
		else if (m == 18) { printf "d%d NS ns.d%d\nns.d%d A 10.2.%d.%d\n", i, i, i, int(i/256)%256, i%256; c += 2 }
		else { printf "s%d NS ns.s%d\ns%d DS %d 13 2 %064x\nns.s%d A 10.3.%d.%d\n", i, i, i, i%65536, i, i, int(i/256)%256, i%256; c += 3 }
	}
}'
