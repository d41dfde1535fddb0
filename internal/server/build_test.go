package server

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBuildsElsewhere: the module builds for systems without recvmmsg and
// sendmmsg, where the server falls back to the portable UDP loop
// (udp_other.go). Every package of the module is type-checked from source
// as GOOS=darwin and GOOS=freebsd would build it (their build tags, no
// cgo): what `GOOS=darwin go build ./...` would reject for our Go code,
// undefined names, wrong types, unused imports, this rejects too. The
// build itself compiled the standard library for both systems from
// scratch on a fresh machine: about 110 s of CPU (measured under load),
// which made `make test` miss its five minutes; this takes about 10 s.
func TestBuildsElsewhere(t *testing.T) {
	if raceEnabled {
		t.Skip("type-checking has no concurrency to check: make test runs it without -race (29 s with it, 10 s without)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := modfileModule(gomod)
	if module == "" {
		t.Fatal("no module line in go.mod")
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The two systems are checked at once, each with its own importer.
	for _, goos := range []string{"darwin", "freebsd"} {
		t.Run(goos, func(t *testing.T) {
			t.Parallel()
			checkBuilds(t, root, module, goos, dirs)
		})
	}
}

// checkBuilds type-checks the module's packages in dirs as goos would
// build them.
func checkBuilds(t *testing.T, root, module, goos string, dirs []string) {
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", false
	imp := &sourceImporter{ctx: &ctx, module: module, fset: token.NewFileSet(), pkgs: map[string]*checked{}}
	n := 0
	for _, dir := range dirs {
		bp, err := ctx.ImportDir(dir, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			continue
		}
		if err != nil {
			t.Errorf("GOOS=%s: %s: %v", goos, dir, err)
			continue
		}
		// ImportDir names every directory "."; the cache needs the
		// path that imports of it use.
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		bp.ImportPath = strings.TrimSuffix(module+"/"+filepath.ToSlash(rel), "/.")
		if _, err := imp.check(bp); err != nil {
			t.Errorf("GOOS=%s: %v", goos, err)
		}
		n++
	}
	if n < 10 {
		t.Errorf("GOOS=%s: %d packages checked, want the module's (%d directories)", goos, n, len(dirs))
	}
}

// modfileModule returns the module path of a go.mod file's text.
func modfileModule(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// sourceImporter type-checks imported packages from source for its build
// context (another GOOS than the test's), each once.
type sourceImporter struct {
	ctx    *build.Context
	module string // the module's path: its packages are checked whole
	fset   *token.FileSet
	pkgs   map[string]*checked
}

// checked is a package type-checked, or being checked (neither set).
type checked struct {
	pkg *types.Package
	err error
}

// Import is ImportFrom without a directory.
func (s *sourceImporter) Import(path string) (*types.Package, error) {
	return s.ImportFrom(path, "", 0)
}

// ImportFrom finds path as seen from dir and type-checks it.
func (s *sourceImporter) ImportFrom(path, dir string, _ types.ImportMode) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	bp, err := s.ctx.Import(path, dir, 0)
	if err != nil {
		return nil, err
	}
	return s.check(bp)
}

// check type-checks the package bp describes (its Go files for the
// context's system), or returns it from the cache.
func (s *sourceImporter) check(bp *build.Package) (*types.Package, error) {
	if c, ok := s.pkgs[bp.ImportPath]; ok {
		if c.pkg == nil && c.err == nil {
			return nil, fmt.Errorf("import cycle through %s", bp.ImportPath)
		}
		return c.pkg, c.err
	}
	c := &checked{}
	s.pkgs[bp.ImportPath] = c
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(s.fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			c.err = err
			return nil, err
		}
		files = append(files, f)
	}
	var errs []error
	conf := types.Config{
		Importer: s,
		// Only the module's own function bodies are checked: the
		// standard library's and the dependencies' are their authors'
		// concern, and skipping them halves the time.
		IgnoreFuncBodies: bp.ImportPath != s.module && !strings.HasPrefix(bp.ImportPath, s.module+"/"),
		Error: func(err error) {
			if len(errs) < 10 {
				errs = append(errs, err)
			}
		},
	}
	p, _ := conf.Check(bp.ImportPath, s.fset, files, nil)
	if len(errs) > 0 {
		c.err = fmt.Errorf("%s: %w", bp.ImportPath, errors.Join(errs...))
		return nil, c.err
	}
	c.pkg = p
	return p, nil
}

// TestPortableUDP runs this package's tests with the portable UDP loop
// (the ternportable build tag), the one other systems get.
func TestPortableUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the package's tests again")
	}
	if raceEnabled {
		t.Skip("make test runs it without -race: the package's race run already covers the shared code")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the portable loop is the only one here")
	}
	// Not TestBuildsElsewhere again: it type-checks for other systems
	// from source whatever this build's tags, and make test runs it
	// beside this test (it took 10 s of this test's 56 s on a quiet
	// machine, minutes on a loaded one).
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-short", "-count=1", "-tags", "ternportable", "-skip", "^TestBuildsElsewhere$", ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test -tags ternportable: %v\n%s", err, out)
	}
}
