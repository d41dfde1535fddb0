package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit: dist/systemd/tern.service passes systemd-analyze
// verify with nothing to say (an unknown or misspelt key is only a
// warning there, so any output fails the test), in a copy whose
// ExecStart names an executable that exists (verify checks it): this
// test's binary. It has the sandboxing issue 15 asks for. Skipped
// without systemd-analyze unless TERN_REQUIRE_PEERS is set.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join("..", "..", "dist", "systemd", "tern.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nProtectSystem=strict\n", "\nNoNewPrivileges=yes\n",
		"\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", "\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n",
		"\nUser=tern\n", "\nStateDirectory=tern\n", "\nRuntimeDirectory=tern\n",
		"\nExecReload=/bin/kill -HUP $MAINPID\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("tern.service lacks %q", strings.TrimSpace(want))
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("TERN_REQUIRE_PEERS") != "" {
			t.Fatal("systemd-analyze not found (TERN_REQUIRE_PEERS is set)")
		}
		t.Skip("systemd-analyze not found")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copied := strings.ReplaceAll(string(unit), "/usr/local/bin/tern", self)
	path := filepath.Join(t.TempDir(), "tern.service")
	if err := os.WriteFile(path, []byte(copied), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
