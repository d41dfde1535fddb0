package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// TestShutdown: Shutdown stops accepting connections at once, closes an
// idle connection instead of waiting out its idle timeout, and waits for
// a deferred stream (as a zone transfer out is) begun before it, which
// the client then reads whole.
func TestShutdown(t *testing.T) {
	s, release, w := startDeferring(t, "127.0.0.1:0", false)
	addr := s.Addrs()[0]
	busy := dialTCP(t, s, &net.Dialer{})
	idle := dialTCP(t, s, &net.Dialer{})
	sendRead(t, busy, w, "s1")
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	// The idle connection is closed without waiting for its timeout
	// (10 s); the listener refuses new connections.
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("idle connection: read %d, %v; want EOF", n, err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("a connection was accepted after Shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) before the deferred stream ended", err)
	default:
	}
	close(release)
	_ = busy.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []string
	for {
		var l [2]byte
		if _, err := io.ReadFull(busy, l[:]); err != nil {
			break
		}
		m := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(busy, m); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m))
	}
	if len(got) != 3 || got[2] != "S3s1" {
		t.Errorf("stream %q, want S1 S2 S3s1 whole", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the stream ended")
	}
	<-w.done
}

// TestShutdownTimeout: when Shutdown's context ends before a deferred
// reply, the connection is closed (the reply's sender, released once the
// client saw it closed, finds it gone) and Shutdown returns the context's error.
func TestShutdownTimeout(t *testing.T) {
	s, release, w := startDeferring(t, "127.0.0.1:0", false)
	c := dialTCP(t, s, &net.Dialer{})
	sendRead(t, c, w, "d1")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// Released only once the server closed the connection, which
	// Shutdown does only after ctx ended.
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(io.Discard, c)
		close(release)
	}()
	if err := s.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Errorf("Shutdown: %v, want %v", err, context.DeadlineExceeded)
	}
}

// sendRead sends msg on c and waits until w has read it (its Remote
// recorded), so that it is in flight before what the test does next.
func sendRead(t *testing.T, c net.Conn, w *deferWorker, msg string) {
	t.Helper()
	framed := binary.BigEndian.AppendUint16(nil, uint16(len(msg)))
	if _, err := c.Write(append(framed, msg...)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		w.mu.Lock()
		_, seen := w.remotes[msg]
		w.mu.Unlock()
		if seen {
			return
		}
		if i == 500 {
			t.Fatalf("%q was not read", msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
