package dnssec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so that a reader (or a crash) sees
// either the old content or the new, never a torn file: it writes a
// temporary file in the same directory, fsyncs it, renames it over path and
// fsyncs the directory so the rename itself is durable.
//
// Temporary files of earlier writes of path that a crash left behind are
// removed first.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if _, err := removeTemps(dir, globEscape(filepath.Base(path))); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempInfix+"*")
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
	return syncDir(dir)
}

// syncDir fsyncs a directory so that entries created or renamed in it
// survive a crash.
func syncDir(dir string) error {
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

// mkdirDurable is os.MkdirAll that also fsyncs the parent of each
// directory it creates: without that, a crash can lose a new key
// directory, and with it files whose own fsyncs had returned.
func mkdirDurable(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// tempInfix separates a file's name from the random part in the names of
// WriteFileAtomic's temporary files: ".<name>.tmp<random>".
const tempInfix = ".tmp"

// removeTemps removes the temporary files WriteFileAtomic makes for the
// files of dir whose names match the glob name, and returns how many it
// removed.
func removeTemps(dir, name string) (int, error) {
	temps, err := matchDir(dir, "."+name+tempInfix+"*")
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

// matchDir returns the names of the entries of dir that match the glob
// pattern. Unlike filepath.Glob it takes dir literally, whatever
// characters its name holds.
func matchDir(dir, pattern string) ([]string, error) {
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
