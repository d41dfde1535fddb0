// Package durable writes files and directories so that they survive a
// crash whole: a file is replaced atomically (write a temporary, fsync,
// rename, fsync the directory), a new directory's parent is fsynced.
package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes data to path so that a reader (or a crash) sees
// either the old content or the new, never a torn file: it writes a
// temporary file in the same directory, fsyncs it, renames it over path and
// fsyncs the directory so the rename itself is durable.
//
// Temporary files of earlier writes of path that a crash left behind are
// removed first.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if _, err := RemoveTemps(dir, GlobEscape(filepath.Base(path))); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+TempInfix+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that entries created or renamed in it
// survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAll is os.MkdirAll that also fsyncs the parent of each
// directory it creates: without that, a crash can lose a new key
// directory, and with it files whose own fsyncs had returned.
func MkdirAll(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// TempInfix separates a file's name from the random part in the names of
// WriteFile's temporary files: ".<name>.tmp<random>".
const TempInfix = ".tmp"

// RemoveTemps removes the temporary files WriteFile makes for the
// files of dir whose names match the glob name, and returns how many it
// removed.
func RemoveTemps(dir, name string) (int, error) {
	temps, err := MatchDir(dir, "."+name+TempInfix+"*")
	if err != nil {
		return 0, err
	}
	for _, t := range temps {
		if err := os.Remove(filepath.Join(dir, t)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
	}
	return len(temps), nil
}

// MatchDir returns the names of the entries of dir that match the glob
// pattern. Unlike filepath.Glob it takes dir literally, whatever
// characters its name holds.
func MatchDir(dir, pattern string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		ok, err := filepath.Match(pattern, e.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// GlobEscape quotes the glob metacharacters of a file name (a zone's
// name may hold any of them).
func GlobEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// FileName is s (a zone's name, which may hold any octet in escapes,
// '/' included) made safe as one file name: every byte but a-z, 0-9,
// '.', '-' and '_' written as %xx, so that no name becomes a path (a
// catalog member named "/etc/x." is not a file in /etc).
func FileName(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}
