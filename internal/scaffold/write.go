package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// files are rendered files by slash-separated path relative to the
// project's root. Everything is rendered into files before anything is
// written, so that a bad template or input writes nothing.
type files map[string][]byte

// write writes every file under root, making directories as needed.
func (fs files) write(root string) error {
	for _, p := range slices.Sorted(mapKeys(fs)) {
		path := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(path, fs[p], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// skipped are the directories a snapshot neither records nor restores:
// git's, and bin/, which holds build output (tools a failed step may have
// built stay there, as go build's cache would).
var skipped = []string{".git", "bin"}

// snapshot is a project tree as it was before a command changed it: every
// file's content and mode, and every directory.
type snapshot struct {
	existed bool
	files   map[string]fileState
	dirs    map[string]bool
}

type fileState struct {
	data []byte
	mode fs.FileMode
}

func takeSnapshot(root string) (*snapshot, error) {
	s := &snapshot{files: map[string]fileState{}, dirs: map[string]bool{}}
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	s.existed = true
	err := walk(root, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			s.dirs[rel] = true
			return nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		s.files[rel] = fileState{data: b, mode: info.Mode().Perm()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record %s before changing it: %w", root, err)
	}
	return s, nil
}

// walk calls fn for every file and directory under root but root itself
// and the skipped directories, with its path relative to root.
func walk(root string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && slices.Contains(skipped, rel) {
			return filepath.SkipDir
		}
		return fn(rel, d)
	})
}

// restore puts root back as the snapshot found it: files it did not hold
// are removed, files it held are rewritten if they changed, directories it
// did not hold are removed; root itself is removed if it did not exist.
func (s *snapshot) restore(root string) error {
	if !s.existed {
		if err := os.RemoveAll(root); err != nil {
			return fmt.Errorf("remove %s: %w", root, err)
		}
		return nil
	}
	var newDirs []string
	var errs []error
	err := walk(root, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			if !s.dirs[rel] {
				newDirs = append(newDirs, rel)
			}
			return nil
		}
		if _, ok := s.files[rel]; !ok {
			errs = append(errs, os.Remove(filepath.Join(root, rel)))
		}
		return nil
	})
	errs = append(errs, err)
	for rel, f := range s.files {
		path := filepath.Join(root, rel)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, f.data) {
			continue
		}
		errs = append(errs, os.MkdirAll(filepath.Dir(path), 0o755), os.WriteFile(path, f.data, f.mode))
	}
	// Deepest first, so that a directory is empty when its turn comes.
	slices.SortFunc(newDirs, func(a, b string) int {
		return strings.Count(b, string(filepath.Separator)) - strings.Count(a, string(filepath.Separator))
	})
	for _, d := range newDirs {
		errs = append(errs, os.RemoveAll(filepath.Join(root, d)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("restore %s: %w", root, err)
	}
	return nil
}
