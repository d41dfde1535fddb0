package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

const updCrash = "127.0.0.134"

// crashChildEnv names the config a child process of TestUpdateCrash
// serves (the test binary run again, as TestUpdateCrashChild).
const crashChildEnv = "TERN_UPDATE_CRASH_CONFIG"

// crashListenEnv names the address the child listens on (default
// updCrash, a kernel-picked port): other tests that kill a server
// (faults_test.go) give their own block's.
const crashListenEnv = "TERN_CRASH_LISTEN"

// TestUpdateCrashChild is the server TestUpdateCrash kills: tern serve
// in a process of its own. It is skipped unless run as that child.
func TestUpdateCrashChild(t *testing.T) {
	cfg := os.Getenv(crashChildEnv)
	if cfg == "" {
		t.Skip("run by TestUpdateCrash only")
	}
	listen := os.Getenv(crashListenEnv)
	if listen == "" {
		listen = updCrash + ":0"
	}
	os.Exit(run(context.Background(), []string{"serve", "-c", cfg, "--listen", listen, "--workers", "1"}, os.Stdout, os.Stderr))
}

// crashServer runs the child server and returns its address; kill
// SIGKILLs it and waits for it to end.
func crashServer(t *testing.T, cfg string, logs io.Writer) (addr string, kill func()) {
	t.Helper()
	return crashServerAt(t, updCrash+":0", cfg, logs)
}

// crashServerAt is crashServer listening on listen.
func crashServerAt(t *testing.T, listen, cfg string, logs io.Writer) (addr string, kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateCrashChild$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+cfg, crashListenEnv+"="+listen)
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		})
	}
	t.Cleanup(kill)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := serveAddr.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	select {
	case a, ok := <-found:
		if !ok {
			kill()
			t.Fatal("the server ended before serving")
		}
		return a, kill
	case <-time.After(time.Minute):
		kill()
		t.Fatal("the server did not start within a minute")
	}
	return "", nil
}

// TestUpdateCrash kills the server (SIGKILL) at random points of a
// stream of dynamic updates, with the zone file rewritten 20 ms after
// each (so that kills land before, during and after the rewrites, and
// between journal appends), restarts it, and checks that every update
// acknowledged (NOERROR) before the kill is served after the restart:
// each name added is there, each deleted is gone. Updates sent but not
// answered may or may not have been made; their names are not checked.
func TestUpdateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills servers")
	}
	dir := t.TempDir()
	cfg, _ := updConfig(t, dir, "20ms", "")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	var logs strings.Builder
	var lmu sync.Mutex
	logw := writerFunc(func(p []byte) (int, error) { lmu.Lock(); defer lmu.Unlock(); return logs.Write(p) })
	// want: the names whose last update was acknowledged, and whether
	// they exist; unsure: names an unanswered update touched.
	want := map[string]bool{}
	unsure := map[string]bool{}
	next := 0
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{"upd.": updSecret}}
	const rounds = 8
	for round := 0; round <= rounds; round++ {
		addr, kill := crashServer(t, cfg, logw)
		// Every acknowledged change is served.
		for name, present := range want {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeTXT)
			r, err := dns.Exchange(m, addr)
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, name, err)
			}
			if got := len(r.Answer) == 1; got != present {
				lmu.Lock()
				t.Fatalf("round %d: %s present %v after the restart, want %v (seed %d)\nlogs:\n%s", round, name, got, present, seed, logs.String())
			}
		}
		if round == rounds {
			kill()
			break
		}
		// A stream of updates, killed after a random time.
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for n := 0; n < 500; n++ {
				select {
				case <-stop:
					return
				default:
				}
				m := new(dns.Msg)
				m.SetUpdate("dyn.test.")
				var name string
				var present bool
				if n%4 == 3 {
					// Delete a name acknowledged as present.
					for nm, p := range want {
						if p && !unsure[nm] {
							name = nm
							break
						}
					}
				}
				if name != "" {
					rr, _ := dns.NewRR(name + " TXT x")
					m.RemoveName([]dns.RR{rr})
				} else {
					name = fmt.Sprintf("r%d.dyn.test.", next)
					next++
					rr, _ := dns.NewRR(fmt.Sprintf("%s 60 TXT \"update %d\"", name, next))
					m.Insert([]dns.RR{rr})
					present = true
				}
				m.SetTsig("upd.", dns.HmacSHA256, 300, time.Now().Unix())
				unsure[name] = true
				r, _, err := c.Exchange(m, addr)
				if err != nil || r.Rcode != dns.RcodeSuccess {
					return // the kill, most likely: name stays unsure
				}
				delete(unsure, name)
				want[name] = present
			}
		}()
		time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)
		kill()
		close(stop)
		<-done
		for name := range unsure {
			delete(want, name)
		}
		clear(unsure)
	}
	if len(want) < 10 {
		t.Errorf("only %d names acknowledged over %d rounds: the kills came too early to test anything", len(want), rounds)
	}
	lmu.Lock()
	defer lmu.Unlock()
	if n := strings.Count(logs.String(), "replayed over the file"); testing.Verbose() {
		t.Logf("%d names checked, %d restarts replayed the update journal, %d zone file rewrites", len(want), n, strings.Count(logs.String(), "zone file written"))
	}
	if regexp.MustCompile(`level=ERROR`).MatchString(logs.String()) {
		t.Errorf("errors logged:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "dyn.zone")); err != nil {
		t.Error(err)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
