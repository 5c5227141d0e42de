package quarantine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Dir is the on-disk [Ledger]. Its layout under the directory it was
// opened on:
//
//	inflight/<digest>      a blob handed to the engine; content: document name
//	quarantined/<digest>   a blob that was in flight when a process ended
//
// An in-flight record is written and fsynced, file and directory, before
// Begin returns. End removes it without an fsync: a process that dies
// keeps the removal (the kernel has it), and only an operating-system crash
// right after an import can leave a record behind, which quarantines a blob
// that did not crash anything; the application sees the report and can
// [Dir.Release] it. Only one process may open a directory at a time.
type Dir struct {
	path        string
	mu          sync.Mutex
	inflight    map[string]int
	quarantined map[string]string
}

// maxDocRecord bounds how much of a record file is read back as the
// document name.
const maxDocRecord = 64 << 10

// OpenDir opens (creating if needed) the ledger in directory path. Every
// digest an earlier process left in flight is quarantined now.
func OpenDir(path string) (*Dir, error) {
	d := &Dir{path: path, inflight: map[string]int{}, quarantined: map[string]string{}}
	for _, sub := range []string{"inflight", "quarantined"} {
		if err := os.MkdirAll(filepath.Join(path, sub), 0o700); err != nil {
			return nil, fmt.Errorf("datasync/quarantine: %w", err)
		}
	}
	left, err := os.ReadDir(filepath.Join(path, "inflight"))
	if err != nil {
		return nil, fmt.Errorf("datasync/quarantine: %w", err)
	}
	for _, e := range left {
		if checkDigest(e.Name()) != nil {
			continue
		}
		if err := os.Rename(d.file("inflight", e.Name()), d.file("quarantined", e.Name())); err != nil {
			return nil, fmt.Errorf("datasync/quarantine: %w", err)
		}
		// The file's time is when it was quarantined: the oldest is
		// dropped first once the list is full.
		now := time.Now()
		_ = os.Chtimes(d.file("quarantined", e.Name()), now, now)
	}
	if len(left) > 0 {
		if err := syncDir(filepath.Join(path, "quarantined")); err != nil {
			return nil, err
		}
		if err := syncDir(filepath.Join(path, "inflight")); err != nil {
			return nil, err
		}
	}
	held, err := os.ReadDir(filepath.Join(path, "quarantined"))
	if err != nil {
		return nil, fmt.Errorf("datasync/quarantine: %w", err)
	}
	if err := d.bound(held); err != nil {
		return nil, err
	}
	return d, nil
}

// bound loads the quarantined records in held, dropping the oldest past
// MaxQuarantined (files and all).
func (d *Dir) bound(held []os.DirEntry) error {
	type rec struct {
		digest string
		at     time.Time
	}
	var recs []rec
	for _, e := range held {
		if checkDigest(e.Name()) != nil {
			continue
		}
		var at time.Time
		if fi, err := e.Info(); err == nil {
			at = fi.ModTime()
		}
		recs = append(recs, rec{e.Name(), at})
	}
	slices.SortFunc(recs, func(a, b rec) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c // newest first
		}
		return strings.Compare(a.digest, b.digest)
	})
	for i, r := range recs {
		if i < MaxQuarantined {
			d.quarantined[r.digest] = readDoc(d.file("quarantined", r.digest))
			continue
		}
		if err := os.Remove(d.file("quarantined", r.digest)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("datasync/quarantine: %w", err)
		}
	}
	if len(recs) > MaxQuarantined {
		return syncDir(filepath.Join(d.path, "quarantined"))
	}
	return nil
}

func (d *Dir) file(sub, digest string) string { return filepath.Join(d.path, sub, digest) }

// Begin implements [Ledger].
func (d *Dir) Begin(digest, doc string) error {
	if err := checkDigest(digest); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, q := d.quarantined[digest]; q {
		return fmt.Errorf("%w: %s (document %q)", ErrQuarantined, digest, doc)
	}
	if d.inflight[digest] > 0 {
		d.inflight[digest]++
		return nil
	}
	if err := writeSynced(d.file("inflight", digest), []byte(doc)); err != nil {
		return err
	}
	if err := syncDir(filepath.Join(d.path, "inflight")); err != nil {
		_ = os.Remove(d.file("inflight", digest))
		return err
	}
	d.inflight[digest] = 1
	return nil
}

// End implements [Ledger].
func (d *Dir) End(digest string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.inflight[digest]
	if n == 0 {
		return nil
	}
	if n > 1 {
		d.inflight[digest] = n - 1
		return nil
	}
	delete(d.inflight, digest)
	if err := os.Remove(d.file("inflight", digest)); err != nil {
		return fmt.Errorf("datasync/quarantine: %w", err)
	}
	return nil
}

// Quarantined implements [Ledger].
func (d *Dir) Quarantined() []Entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return entries(d.quarantined)
}

// Release implements [Ledger].
func (d *Dir) Release(digest string) error {
	if err := checkDigest(digest); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.Remove(d.file("quarantined", digest)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("datasync/quarantine: %w", err)
	}
	delete(d.quarantined, digest)
	return syncDir(filepath.Join(d.path, "quarantined"))
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("datasync/quarantine: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("datasync/quarantine: %w", err)
	}
	return nil
}

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("datasync/quarantine: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("datasync/quarantine: %w", err)
	}
	return nil
}

// readDoc reads a record's document name; a record cut short by the crash
// it records reads as what was written.
func readDoc(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxDocRecord))
	return string(b)
}
