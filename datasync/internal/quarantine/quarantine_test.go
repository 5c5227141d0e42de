package quarantine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// restartable is a ledger and the way to simulate a process that died and
// a new one that opened the same ledger.
type restartable struct {
	name    string
	open    func(t *testing.T) Ledger
	restart func(t *testing.T, l Ledger) Ledger
}

func ledgers(t *testing.T) []restartable {
	dir := filepath.Join(t.TempDir(), "q")
	openDir := func(t *testing.T) Ledger {
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return []restartable{
		{"dir", openDir, func(t *testing.T, _ Ledger) Ledger { return openDir(t) }},
		{"memory", func(*testing.T) Ledger { return &Memory{} },
			func(_ *testing.T, l Ledger) Ledger { l.(*Memory).Restart(); return l }},
	}
}

func TestLedger(t *testing.T) {
	crash, done, twice := Digest([]byte("crash")), Digest([]byte("done")), Digest([]byte("twice"))
	for _, lr := range ledgers(t) {
		t.Run(lr.name, func(t *testing.T) {
			l := lr.open(t)
			for _, d := range []string{crash, done, twice, twice} {
				if err := l.Begin(d, "doc-"+d[:4]); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []string{done, twice} { // twice is still in flight once
				if err := l.End(d); err != nil {
					t.Fatal(err)
				}
			}
			l = lr.restart(t, l)
			q := l.Quarantined()
			if len(q) != 2 {
				t.Fatalf("quarantined %v, want crash and twice", q)
			}
			for _, d := range []string{crash, twice} {
				if err := l.Begin(d, "x"); !errors.Is(err, ErrQuarantined) {
					t.Fatalf("Begin(%s) = %v, want ErrQuarantined", d, err)
				}
			}
			if err := l.Begin(done, "x"); err != nil {
				t.Fatalf("a blob that finished importing was quarantined: %v", err)
			}
			_ = l.End(done)
			// The quarantine outlives further restarts, and Release lifts it.
			l = lr.restart(t, l)
			if len(l.Quarantined()) != 2 || l.Quarantined()[0].Doc != "doc-"+l.Quarantined()[0].Digest[:4] {
				t.Fatalf("after a second restart: %v", l.Quarantined())
			}
			if err := l.Release(crash); err != nil {
				t.Fatal(err)
			}
			l = lr.restart(t, l)
			if err := l.Begin(crash, "x"); err != nil {
				t.Fatalf("released digest still refused: %v", err)
			}
			_ = l.End(crash)
			if err := l.Begin("../../etc/passwd", "x"); !errors.Is(err, ErrDigest) {
				t.Fatalf("bad digest: %v", err)
			}
		})
	}
}

// The in-flight record is on disk while the engine runs, before End.
func TestDirRecordsBeforeEngine(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := Digest([]byte("blob"))
	if err := l.Begin(d, "notes"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "inflight", d))
	if err != nil || string(b) != "notes" {
		t.Fatalf("record %q, %v", b, err)
	}
	_ = l.End(d)
	if _, err := os.Stat(filepath.Join(dir, "inflight", d)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record left after End: %v", err)
	}
	// Stray files are not digests and are ignored.
	_ = os.WriteFile(filepath.Join(dir, "inflight", "junk"), nil, 0o600)
	if l, err = OpenDir(dir); err != nil || len(l.Quarantined()) != 0 {
		t.Fatalf("reopen: %v %v", l.Quarantined(), err)
	}
}
