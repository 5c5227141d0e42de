package loro

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/internal/realtest"
)

// Benchmarks: the Loro engine against the KV engine (the anchor) and
// against loro-crdt under Node, at 10,000 and 100,000 keys. Each
// benchmark op is a whole run at that size; the per-key and per-call
// figures are reported as metrics. Figures: docs/benchmarks/datasync.md.

var benchSizes = []int{10_000, 100_000}

func benchValue(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 32)) }

// rssBytes reads this process's resident set size.
func rssBytes() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

type benchEngine interface {
	engine.Engine
	set(doc, key, value string) error
}

type kvBench struct{ *engine.KV }

func (k kvBench) set(doc, key, value string) error { return k.Set(doc, key, []byte(value)) }

type loroBench struct{ *Engine }

func (l loroBench) set(doc, key, value string) error {
	return l.Set(doc, key, Value{Kind: Text, Text: value})
}

func newBench(b *testing.B, kind string, peer uint64) benchEngine {
	if kind == "kv" {
		k, err := engine.NewKV(fmt.Sprint(peer))
		if err != nil {
			b.Fatal(err)
		}
		return kvBench{k}
	}
	return loroBench{newEngine(b, peer)}
}

func BenchmarkEngines(b *testing.B) {
	for _, n := range benchSizes {
		for _, kind := range []string{"kv", "loro"} {
			b.Run(fmt.Sprintf("%s/keys=%d", kind, n), func(b *testing.B) {
				for range b.N {
					benchOnce(b, kind, n)
				}
			})
		}
	}
}

// benchOnce builds a document of n keys with one committed set per key,
// exports its changes and its snapshot, imports the changes into a fresh
// replica and reloads the snapshot into another.
func benchOnce(b *testing.B, kind string, n int) {
	e := newBench(b, kind, 1)
	t0 := time.Now()
	for i := range n {
		if err := e.set("d", fmt.Sprint("key-", i), benchValue(i)); err != nil {
			b.Fatal(err)
		}
	}
	sets := time.Since(t0)
	t0 = time.Now()
	ch, err := e.Changes("d", nil)
	if err != nil {
		b.Fatal(err)
	}
	exportUpdates := time.Since(t0)
	t0 = time.Now()
	snap, err := e.Snapshot("d")
	if err != nil {
		b.Fatal(err)
	}
	exportSnap := time.Since(t0)
	t0 = time.Now()
	if out, err := newBench(b, kind, 2).Import("d", ch); out != engine.Applied {
		b.Fatal(out, err)
	}
	imp := time.Since(t0)
	t0 = time.Now()
	if out, err := newBench(b, kind, 3).ImportSnapshot("d", snap); out != engine.Applied {
		b.Fatal(out, err)
	}
	reload := time.Since(t0)
	b.ReportMetric(float64(sets.Nanoseconds())/float64(n), "ns/set")
	b.ReportMetric(float64(exportUpdates.Nanoseconds()), "ns/export-updates")
	b.ReportMetric(float64(exportSnap.Nanoseconds()), "ns/export-snapshot")
	b.ReportMetric(float64(imp.Nanoseconds()), "ns/import")
	b.ReportMetric(float64(reload.Nanoseconds()), "ns/reload")
	b.ReportMetric(float64(len(ch)), "update-bytes")
	b.ReportMetric(float64(len(snap)), "snapshot-bytes")
	b.ReportMetric(rssBytes(), "rss-bytes")
	if l, ok := e.(loroBench); ok {
		mem, _ := l.Stats()
		b.ReportMetric(float64(mem), "wasm-bytes")
	}
}

// BenchmarkNode runs the same operations on loro-crdt 1.13.9 under Node
// (testdata/bench.cjs) and reports its own timings.
func BenchmarkNode(b *testing.B) {
	bin, dir := realtest.Getenv("FERRY_LORO_NODE"), realtest.Getenv("FERRY_LORO_DIR")
	if bin == "" || dir == "" {
		realtest.Unavailable(b, "loro-crdt 1.13.9 for Node 24 not installed (run scripts/setup.d/35-loro.sh)")
		return
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for range b.N {
				cmd := exec.CommandContext(context.Background(), bin, "testdata/bench.cjs")
				cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
				cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"keys":%d}`, n))
				var errb bytes.Buffer
				cmd.Stderr = &errb
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("%v: %s", err, errb.String())
				}
				var r map[string]float64
				if err := json.Unmarshal(out, &r); err != nil {
					b.Fatal(err)
				}
				for _, k := range []string{"setNs:ns/set", "exportUpdatesNs:ns/export-updates", "exportSnapshotNs:ns/export-snapshot",
					"importNs:ns/import", "reloadNs:ns/reload", "updateBytes:update-bytes", "snapshotBytes:snapshot-bytes",
					"rssBytes:rss-bytes", "wasmBytes:wasm-bytes"} {
					from, unit, _ := strings.Cut(k, ":")
					b.ReportMetric(r[from], unit)
				}
			}
		})
	}
}
