package zonedb

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/config"
)

// TestSignedSerial: a zone the server signs is served with a serial of
// its own that goes up with every change of what is served (first
// signing, signature refresh, a changed file), stays on reloads that
// change nothing, survives a restart, and so passes CompareVersions'
// checks without a warning. Turning signing off serves the file's serial
// again, lower: that is warned about.
func TestSignedSerial(t *testing.T) {
	zc, _ := setup(t)
	data, err := os.ReadFile(zc.File)
	if err != nil {
		t.Fatal(err)
	}
	withSerial := func(serial, extra string) {
		t.Helper()
		text := strings.Replace(string(data), "hostmaster 1 ", "hostmaster "+serial+" ", 1)
		if text == string(data) && serial != "1" {
			t.Fatal("testdata/auto.test.zone: no serial 1 to replace")
		}
		write(t, zc.File, text+extra)
	}
	ctx := context.Background()
	clk := &clock{t: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)}
	var pub published
	var log logged
	m := New([]config.Zone{zc}, pub.publish, log.logger(), clk.now)
	step := func(what string, do func() error, want string) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := state(t, &pub, "auto.test."); got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	load := func() error { _, err := m.Load(ctx); return err }
	reload := func() error { _, err := m.Reload(ctx, []config.Zone{zc}); return err }
	maintain := func() error {
		clk.add(m.Next().Sub(clk.now()) + time.Minute)
		return m.Maintain(ctx)
	}

	step("first signing of serial 1", load, "serial 2")
	step("reload, nothing changed", reload, "serial 2")
	step("signature refresh", maintain, "serial 3")
	withSerial("1", "new TXT \"new\"\n")
	step("reload, a record added under the same file serial", reload, "serial 4")
	m = New([]config.Zone{zc}, pub.publish, log.logger(), clk.now)
	step("restart", load, "serial 4")
	withSerial("10", "new TXT \"new\"\n")
	step("file serial raised", reload, "serial 11")
	withSerial("5", "new TXT \"new\"\n")
	step("file serial lowered", reload, "serial 11")
	if strings.Contains(log.String(), "SOA serial") {
		t.Errorf("serial warnings for the signed zone:\n%s", log.String())
	}

	unsigned := zc
	unsigned.Signing = nil
	if _, err := m.Reload(ctx, []config.Zone{unsigned}); err != nil {
		t.Fatal(err)
	}
	if got := state(t, &pub, "auto.test."); got != "serial 5" {
		t.Errorf("signing turned off: %s, want serial 5", got)
	}
	if want := "the SOA serial went down from 11 to 5"; !log.has(want) {
		t.Errorf("no %q in\n%s", want, log.String())
	}
}
