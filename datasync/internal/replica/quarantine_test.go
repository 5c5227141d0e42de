package replica

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
)

// crashEngine is a KV that panics (ending the process: the panic is on the
// link's goroutine) when it is handed a blob containing "POISON" and die is
// set, and otherwise counts such blobs.
type crashEngine struct {
	*engine.KV
	die    bool
	poison atomic.Int32
}

func (c *crashEngine) check(b []byte) {
	if bytes.Contains(b, []byte("POISON")) {
		c.poison.Add(1)
		if c.die {
			panic("engine crashed on a poison blob")
		}
	}
}

func (c *crashEngine) Import(doc string, ch []byte) (engine.Outcome, error) {
	c.check(ch)
	return c.KV.Import(doc, ch)
}

func (c *crashEngine) ImportSnapshot(doc string, s []byte) (engine.Outcome, error) {
	c.check(s)
	return c.KV.ImportSnapshot(doc, s)
}

// crashSides returns a (holding the poison document "bad", and "good" when
// withGood) and b, whose engine is a crashEngine over the ledger in dir.
func crashSides(t *testing.T, dir string, die, withGood bool) (a, b *side, eng *crashEngine) {
	ledger, err := quarantine.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := testnet.Pipe("a", "b")
	a = newSide(t, "a", ca, 0)
	_ = a.kv.Set("bad", "k", []byte("POISON"))
	if withGood {
		_ = a.kv.Set("good", "k", []byte("fine"))
	}
	kv, _ := engine.NewKV("b")
	eng = &crashEngine{KV: kv, die: die}
	b = &side{kv: kv}
	sp := &exchange.Space{Engine: eng, Ledger: ledger,
		Report: func(r exchange.Report) { b.mu.Lock(); b.reports = append(b.reports, r); b.mu.Unlock() }}
	b.link = NewInSpace(sp, cb, Options{Caps: caps, Interval: 20 * time.Millisecond})
	return a, b, eng
}

// TestHelperCrashingReplica is the helper process of TestQuarantineAcrossCrash:
// a replica whose engine ends the process importing a peer's blob. Run on
// its own it does nothing.
func TestHelperCrashingReplica(t *testing.T) {
	dir := os.Getenv("FERRY_QUARANTINE_DIR")
	if dir == "" {
		return
	}
	a, b, _ := crashSides(t, dir, true, false)
	stop := run(t, a, b)
	defer stop()
	time.Sleep(10 * time.Second)
	t.Fatal("the engine never crashed")
}

// TestQuarantineAcrossCrash: a replica process dies inside its engine
// importing a peer's blob; the on-disk ledger it leaves behind makes the
// restarted replica refuse that blob without handing it to the engine, and
// report it, while the peer's other documents still import.
func TestQuarantineAcrossCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quarantine")
	c := exec.Command(os.Args[0], "-test.run=^TestHelperCrashingReplica$", "-test.count=1")
	c.Env = append(os.Environ(), "FERRY_QUARANTINE_DIR="+dir)
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "engine crashed on a poison blob") {
		t.Fatalf("helper did not crash in the engine: %v\n%s", err, out)
	}
	left, _ := os.ReadDir(filepath.Join(dir, "inflight"))
	if len(left) != 1 {
		t.Fatalf("%d in-flight records after the crash", len(left))
	}

	a, b, eng := crashSides(t, dir, false, true)
	stop := run(t, a, b)
	defer stop()
	waitFor(t, "the good document", func() bool { v, _ := b.kv.Get("good", "k"); return string(v) == "fine" })
	waitFor(t, "the quarantine report", func() bool {
		for _, r := range b.Reports() {
			if r.Doc == "bad" && errors.Is(r.Err, quarantine.ErrQuarantined) {
				return true
			}
		}
		return false
	})
	time.Sleep(100 * time.Millisecond) // a few more anti-entropy rounds offer it again
	stop()
	if n := eng.poison.Load(); n != 0 {
		t.Fatalf("quarantined blob handed to the engine %d times after the restart", n)
	}
	if _, ok := b.kv.Get("bad", "k"); ok {
		t.Fatal("quarantined blob imported")
	}
	if r := b.Reports(); len(r) != 1 {
		t.Fatalf("reports %v, want the one quarantine report", r)
	}
	q := b.link.Space().Ledger.Quarantined()
	if len(q) != 1 || q[0].Doc != "bad" {
		t.Fatalf("quarantined %v", q)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "inflight")); len(left) != 0 {
		t.Fatalf("%d in-flight records after clean imports", len(left))
	}
}
