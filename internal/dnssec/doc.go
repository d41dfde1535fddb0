// Package dnssec signs DNS zones for Tern: offline signing of a whole zone
// (NSEC or NSEC3 chains, RFC 4034 and RFC 5155 with RFC 9276 parameters),
// incremental re-signing that keeps still-valid signatures of unchanged
// RRsets, BIND-compatible key files, and a key manager that runs ZSK
// pre-publication and KSK double-DS rollovers (RFC 6781, RFC 7583) with
// CDS/CDNSKEY publication (RFC 7344, RFC 8078).
//
// All cryptography is miekg/dns's (dns.RRSIG.Sign, dns.DNSKEY.Generate,
// dns.HashName); this package only decides what to sign, with which key and
// when. Every function that depends on the time takes it as an argument.
package dnssec
