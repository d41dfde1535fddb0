/*
 * echo.c - the "floor" for the Tern benchmark harness.
 *
 * A UDP responder that does the least a DNS server could possibly do: it
 * receives datagrams in batches with a blocking recvmmsg(2), sets the QR
 * (response) bit of each DNS header, and sends every datagram straight back
 * to its source with sendmmsg(2). No parsing, no lookup, no allocation.
 *
 * Its throughput and CPU cost per query are the bound that the kernel's UDP
 * path and the load generator impose on any single-threaded server on this
 * machine; bench/run.sh reports Tern's numbers relative to it.
 *
 * Usage: echo ADDR PORT [SIZE]   (e.g. echo 127.0.0.1 25300; ADDR may be IPv6)
 * Build: gcc -O2 -Wall -o echo echo.c
 * Stops on SIGTERM/SIGINT (default action).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64
#define BUFSZ 4096

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s ADDR PORT [SIZE]\n", argv[0]);
		return 2;
	}
	/* SIZE: pad every reply with zeros to this many bytes, so that the
	 * floor can carry as many bytes as a server's real answers do. */
	unsigned int pad = argc == 4 ? (unsigned int)atoi(argv[3]) : 0;
	if (pad > BUFSZ)
		pad = BUFSZ;

	struct sockaddr_storage addr;
	socklen_t addrlen;
	memset(&addr, 0, sizeof(addr));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
	unsigned short port = htons((unsigned short)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = port;
		addrlen = sizeof(*a4);
	} else if (inet_pton(AF_INET6, argv[1], &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = port;
		addrlen = sizeof(*a6);
	} else {
		fprintf(stderr, "echo: bad IP address %s\n", argv[1]);
		return 2;
	}

	int fd = socket(addr.ss_family, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	/* Big socket buffers (as Tern uses): the floor should never drop a
	 * query because a burst outran it. Capped by net.core.[rw]mem_max. */
	int bufsz = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	if (bind(fd, (struct sockaddr *)&addr, addrlen) < 0) {
		perror("bind");
		return 1;
	}

	static char bufs[BATCH][BUFSZ];
	static struct sockaddr_storage peers[BATCH];
	static struct iovec iov[BATCH];
	static struct mmsghdr msgs[BATCH];

	for (;;) {
		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = BUFSZ;
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &peers[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(peers[i]);
		}

		/* Block for the first datagram, then take whatever else is queued. */
		int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("recvmmsg");
			return 1;
		}

		int m = 0;
		for (int i = 0; i < n; i++) {
			unsigned int len = msgs[i].msg_len;
			if (len < 12)
				continue; /* not even a DNS header: drop */
			bufs[i][2] |= (char)0x80; /* QR = 1: this is a response */
			if (len < pad) {
				memset(bufs[i] + len, 0, pad - len);
				len = pad;
			}
			iov[i].iov_len = len;
			if (m != i)
				msgs[m] = msgs[i];
			m++;
		}

		for (int off = 0; off < m;) {
			int s = sendmmsg(fd, msgs + off, (unsigned int)(m - off), 0);
			if (s < 0) {
				if (errno == EINTR)
					continue;
				perror("sendmmsg");
				break; /* drop the rest of this batch */
			}
			off += s;
		}
	}
}
