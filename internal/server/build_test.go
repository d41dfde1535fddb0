package server

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBuildsElsewhere: the module builds for systems without recvmmsg and
// sendmmsg, where the server falls back to the portable UDP loop
// (udp_other.go). Cross-compiling takes a while the first time: skipped
// with -short.
func TestBuildsElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the module")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, goos := range []string{"darwin", "freebsd"} {
		cmd := exec.Command(goCmd, "build", "./...")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go build ./...: %v\n%s", goos, err, out)
		}
	}
}

// TestPortableUDP runs this package's tests with the portable UDP loop
// (the ternportable build tag), the one other systems get.
func TestPortableUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the package's tests again")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the portable loop is the only one here")
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-short", "-count=1", "-tags", "ternportable", ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test -tags ternportable: %v\n%s", err, out)
	}
}
