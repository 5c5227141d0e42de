package tandem

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// Benchmarks of the durable device (docs/benchmarks/tandem-device.md).
// Each comes with its anchor in the same run:
//
//	BenchmarkReopen/device vs BenchmarkReopen/raw-rows: Open of a device
//	holding 10,000 records / 100,000 kept writes vs reading the same rows
//	of its database with database/sql.
//	BenchmarkLocalWrite/device vs BenchmarkLocalWrite/raw-insert: one
//	durable Set vs one INSERT + COMMIT of the same stored bytes and
//	outbox row with the same pragmas.

const benchRecords, benchFields = 10_000, 10

var (
	bigOnce sync.Once
	bigDir  string
	bigErr  error
)

// bigDevice builds, once per process, a device of benchRecords records with
// benchFields fields each, every write kept.
func bigDevice(b *testing.B) string {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tandem-bench-")
		if err != nil {
			bigErr = err
			return
		}
		bigDir = filepath.Join(dir, "dev")
		d, err := Open(context.Background(), bigDir, Options{Name: "Bench", Logger: quiet()})
		if err != nil {
			bigErr = err
			return
		}
		defer d.Close()
		d.db.SQL().Exec("PRAGMA synchronous = OFF") // setup only
		c, err := d.NewCollection("Big")
		if err != nil {
			bigErr = err
			return
		}
		val := make([]byte, 16)
		for i := 0; i < benchRecords && bigErr == nil; i++ {
			var id RecordID
			rand.Read(id[:])
			for f := 0; f < benchFields && bigErr == nil; f++ {
				rand.Read(val)
				bigErr = d.Set(c, id, fmt.Sprintf("f%d", f), val)
			}
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigDir
}

// copyDir copies the device directory, so each iteration opens a fresh copy.
func copyDir(b *testing.B, src string) string {
	dst := filepath.Join(b.TempDir(), "dev")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	return dst
}

func BenchmarkReopen(b *testing.B) {
	src := bigDevice(b)
	dir := copyDir(b, src)
	b.Run("device", func(b *testing.B) {
		for b.Loop() {
			d, err := Open(context.Background(), dir, Options{Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			d.release() // no prune: the next iteration opens the same rows
			b.StartTimer()
		}
	})
	b.Run("raw-rows", func(b *testing.B) {
		for b.Loop() {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, dbFile)+"?_pragma=journal_mode(WAL)")
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, q := range []string{"SELECT wid, stored FROM writes", "SELECT coll, origin, payload FROM statements", "SELECT id, channel, state, hash FROM msgs", "SELECT seq, channel, envelope FROM outbox"} {
				rows, err := db.Query(q)
				if err != nil {
					b.Fatal(err)
				}
				cols, _ := rows.Columns()
				dest := make([]any, len(cols))
				for i := range dest {
					dest[i] = new(sql.RawBytes)
				}
				for rows.Next() {
					if err := rows.Scan(dest...); err != nil {
						b.Fatal(err)
					}
					n++
				}
				rows.Close()
			}
			db.Close()
			if n < benchRecords*benchFields {
				b.Fatalf("%d rows", n)
			}
		}
	})
}

// BenchmarkOpenMemory reports the heap an open device holds per kept write.
func BenchmarkOpenMemory(b *testing.B) {
	dir := copyDir(b, bigDevice(b))
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d, err := Open(context.Background(), dir, Options{Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(benchRecords*benchFields), "heap-B/write")
		d.release()
	}
}

// benchLocalWrites times d.Set of one field, on one record or (fresh) on
// a new record each time.
func benchLocalWrites(b *testing.B, fresh bool) {
	d, err := Open(context.Background(), filepath.Join(b.TempDir(), "dev"), Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	c, _ := d.NewCollection("W")
	var id RecordID
	rand.Read(id[:])
	val := make([]byte, 16)
	for b.Loop() {
		if fresh {
			rand.Read(id[:])
		}
		rand.Read(val)
		if err := d.Set(c, id, "title", val); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocalWrite(b *testing.B) {
	// device edits one record; device-new-records edits another record
	// each time, as offline, so the outbox grows with b.N (a list imported
	// offline): each edit must still cost what the first one did.
	for _, fresh := range []bool{false, true} {
		name := "device"
		if fresh {
			name = "device-new-records"
		}
		b.Run(name, func(b *testing.B) { benchLocalWrites(b, fresh) })
	}
	b.Run("raw-insert", func(b *testing.B) {
		db, err := devstore.Open(context.Background(), filepath.Join(b.TempDir(), "raw.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		stored := make([]byte, 330) // a write's stored bytes
		wid := make([]byte, 32)
		seq := 0
		for b.Loop() {
			rand.Read(wid)
			seq++
			tx, err := db.SQL().Begin()
			if err != nil {
				b.Fatal(err)
			}
			tx.Exec("INSERT INTO writes(wid, scope, stored) VALUES(?, ?, ?)", wid, wid[:16], stored)
			tx.Exec("INSERT INTO outbox(seq, channel, rec, dirty, kind) VALUES(?, ?, ?, 1, 0)", seq, "c", wid[:16])
			tx.Exec("INSERT INTO meta(k, v) VALUES('hlc', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", wid[:10])
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
