package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testServer is a Server with an echo command (its result is the zone
// asked about) and a failing one (an error and a result).
func testServer(path string) *Server {
	s := New(path, nil)
	s.Handle("echo", func(_ context.Context, req Request) (any, error) { return req.Zone, nil })
	s.Handle("fail", func(_ context.Context, req Request) (any, error) {
		return []string{"partial"}, errors.New("zone " + req.Zone + ": x.zone:3: bad TTL")
	})
	s.Handle("nothing", func(context.Context, Request) (any, error) { return nil, nil })
	s.Handle("unencodable", func(context.Context, Request) (any, error) { return func() {}, nil })
	return s
}

// TestAnswer: each request line gets one response; bad requests get an
// error that says what is wrong, never a crash.
func TestAnswer(t *testing.T) {
	s := testServer("")
	for _, tc := range []struct {
		name, line  string
		result, err string // err: a substring; "" means none
	}{
		{"echo", `{"command":"echo","zone":"example."}`, `"example."`, ""},
		{"no zone", `{"command":"echo"}`, `""`, ""},
		{"no result", `{"command":"nothing"}`, ``, ""},
		{"failure keeps the result", `{"command":"fail","zone":"a."}`, `["partial"]`, "zone a.: x.zone:3: bad TTL"},
		{"unknown command", `{"command":"reboot"}`, ``, `unknown command "reboot"`},
		{"no command", `{}`, ``, `unknown command ""`},
		{"empty line", ``, ``, "bad request"},
		{"not JSON", `status`, ``, "bad request"},
		{"truncated", `{"command":"echo"`, ``, "bad request"},
		{"unknown field", `{"command":"echo","zones":"a."}`, ``, `unknown field "zones"`},
		{"wrong type", `{"command":1}`, ``, "bad request"},
		{"two values", `{"command":"echo"} {"command":"echo"}`, ``, "more than one JSON value"},
		{"array", `[]`, ``, "bad request"},
		{"result not encodable", `{"command":"unencodable"}`, ``, "encoding the result"},
	} {
		r := s.Answer(context.Background(), []byte(tc.line))
		if string(r.Result) != tc.result {
			t.Errorf("%s: result %s, want %s", tc.name, r.Result, tc.result)
		}
		if (tc.err == "") != (r.Error == "") || !strings.Contains(r.Error, tc.err) {
			t.Errorf("%s: error %q, want one with %q", tc.name, r.Error, tc.err)
		}
	}
}

// start starts a test server on a socket in a temp dir.
func start(t *testing.T) (*Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ctl", "control.sock")
	s := testServer(path)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// TestSocket: the socket is mode 0600, answers Call, answers several
// requests on one connection in order, and is removed by Close.
func TestSocket(t *testing.T) {
	s, path := start(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket of mode 0600", fi.Mode())
	}
	r, err := Call(context.Background(), path, Request{Command: "echo", Zone: "b."})
	if err != nil || r.Error != "" || string(r.Result) != `"b."` {
		t.Fatalf("Call: %+v %v", r, err)
	}

	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("{\"command\":\"echo\",\"zone\":\"1\"}\nnonsense\n{\"command\":\"echo\",\"zone\":\"2\"}\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(c)
	var got []Response
	for range 3 {
		if !sc.Scan() {
			t.Fatalf("after %d responses: %v", len(got), sc.Err())
		}
		var r Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response %q: %v", sc.Bytes(), err)
		}
		got = append(got, r)
	}
	if string(got[0].Result) != `"1"` || !strings.Contains(got[1].Error, "bad request") || string(got[2].Result) != `"2"` {
		t.Errorf("responses %+v", got)
	}
	c.Close()

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	if _, err := Call(context.Background(), path, Request{Command: "echo"}); err == nil {
		t.Error("Call after Close succeeded")
	}
}

// TestLongLine: a line over the limit is answered with an error and the
// connection closed; the server keeps answering others.
func TestLongLine(t *testing.T) {
	_, path := start(t)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go c.Write([]byte(`{"command":"echo","zone":"` + strings.Repeat("a", maxLine+10) + "\"}\n"))
	sc := bufio.NewScanner(c)
	if !sc.Scan() || !strings.Contains(sc.Text(), "request longer than") {
		t.Fatalf("answer to a long line: %q %v", sc.Text(), sc.Err())
	}
	if r, err := Call(context.Background(), path, Request{Command: "echo"}); err != nil || r.Error != "" {
		t.Fatalf("Call after a long line: %+v %v", r, err)
	}
}

// TestStartReplacesStale: a socket file no server answers on (a server
// killed) is replaced; one a server answers on is not taken over.
func TestStartReplacesStale(t *testing.T) {
	s, path := start(t)
	second := testServer(path)
	if err := second.Start(context.Background()); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second server on a live socket: %v, want ErrInUse", err)
	}
	if r, err := Call(context.Background(), path, Request{Command: "echo"}); err != nil || r.Error != "" {
		t.Fatalf("the first server after the second's attempt: %+v %v", r, err)
	}
	// What a killed server leaves: the file, no one listening.
	s.Close()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale file not made: %v", err)
	}
	third := testServer(path)
	if err := third.Start(context.Background()); err != nil {
		t.Fatalf("start over a stale file: %v", err)
	}
	defer third.Close()
	if r, err := Call(context.Background(), path, Request{Command: "echo"}); err != nil || r.Error != "" {
		t.Fatalf("Call after replacing a stale file: %+v %v", r, err)
	}
}

// FuzzAnswer: no request line crashes the server or goes unanswered.
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{`{"command":"echo","zone":"a."}`, `{"command":"fail"}`, `{}`, ``, `[`, `{"command":"echo"} 1`, "\x00"} {
		f.Add([]byte(seed))
	}
	s := testServer("")
	f.Fuzz(func(t *testing.T, line []byte) {
		r := s.Answer(context.Background(), line)
		if r.Error == "" && r.Result == nil {
			var req Request
			if json.Unmarshal(line, &req) != nil || req.Command != "nothing" {
				t.Fatalf("%q: neither an error nor a result", line)
			}
		}
	})
}
