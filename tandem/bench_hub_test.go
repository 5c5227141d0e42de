package tandem

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// Benchmarks against real servers (docs/benchmarks/tandem-device.md).
//
//	BenchmarkFirstSync/device vs /anchor: a new device's first sync of a
//	collection of 10,000 records (100,000 writes in record-state messages)
//	from Dovecot — fetch, verify, merge, persist — vs fetching the same
//	messages with the binding alone while crypto/ed25519.Verify checks the
//	same 100,000 signatures on GOMAXPROCS goroutines (/raw-fetch: the
//	fetch alone). BenchmarkCatchUp (bench_sync_test.go): the same for a
//	reopened device reading 1,000 new messages.
//	BenchmarkNotify/<server>: device A's write → device B's change
//	notification under Run, next to a bare Watch on the same server seeing
//	the same append (p50/p95 as metrics).

var (
	firstOnce sync.Once
	firstKey  string
	firstErr  error
	firstHub  Hub
	firstColl CollectionID
	firstDir  string    // the source device's directory
	firstSigs []sigCase // the signatures of the collection's writes
)

func firstSyncSource(b *testing.B) (Hub, string) {
	firstOnce.Do(func() {
		addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
		if addr == "" {
			firstErr = fmt.Errorf("no Dovecot")
			return
		}
		host, port, _ := strings.Cut(addr, ":")
		var p int
		fmt.Sscan(port, &p)
		firstHub = IMAPHub(host, p, "grace", "gracepw")
		cfg := imaphub.Config{Addr: addr, User: "grace", Password: "gracepw"}
		ctx := context.Background()
		s, err := imaphub.Open(ctx, cfg)
		if err != nil {
			firstErr = err
			return
		}
		defer s.Close()
		s.EnsureFolder(ctx)
		ch, _ := s.Changes(ctx, nil)
		var ids []hub.ID
		for _, a := range ch.Added {
			ids = append(ids, a.ID)
		}
		s.Destroy(ctx, ids)
		firstDir, _ = osMkdirTemp()
		d, err := Open(ctx, filepath.Join(firstDir, "src"), Options{Name: "Bench", Hub: firstHub, Logger: quiet()})
		if err != nil {
			firstErr = err
			return
		}
		defer d.Close()
		d.db.SQL().Exec("PRAGMA synchronous = OFF") // setup only
		firstColl, _ = d.NewCollection("Big")
		val := make([]byte, 16)
		for i := 0; i < benchRecords; i++ {
			var id RecordID
			rand.Read(id[:])
			for f := 0; f < benchFields; f++ {
				rand.Read(val)
				d.Set(firstColl, id, fmt.Sprintf("f%d", f), val)
			}
		}
		_, firstErr = d.Sync(ctx)
		firstKey = d.ShowBackupKey()
		firstSigs = sigsOf(d, firstColl, nil)
	})
	if firstErr != nil {
		realtest.Unavailable(b, firstErr.Error())
	}
	return firstHub, firstKey
}

func BenchmarkFirstSync(b *testing.B) {
	h, key := firstSyncSource(b)
	device := func(b *testing.B) time.Duration {
		t0 := time.Now()
		d, err := Restore(context.Background(), filepath.Join(b.TempDir(), "dev"), key, Options{Hub: h, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := d.Sync(context.Background())
		if err != nil || rep.Fetched < benchRecords {
			b.Fatalf("%v %+v", err, rep)
		}
		took := time.Since(t0)
		b.StopTimer()
		d.release()
		b.StartTimer()
		return took
	}
	cfg := rawConfig(h)
	anchor := func(b *testing.B) time.Duration { return rawFetchVerify(b, cfg, nil, firstSigs) }
	againstAnchor(b, device, anchor)
	b.Run("raw-fetch", func(b *testing.B) {
		for b.Loop() {
			rawFetch(b, cfg, nil)
		}
	})
}

func hubAddr(h Hub) string { return fmt.Sprintf("%s:%d", h.d.Host, h.d.Port) }

// rawConfig is the binding's own configuration for h's account: the
// anchors read the same folder without a device.
func rawConfig(h Hub) imaphub.Config {
	return imaphub.Config{Addr: hubAddr(h), User: h.d.User, Password: h.d.Password}
}

// BenchmarkNotify measures A's write → B's Changed under Run, next to a
// bare Watch of the binding on the same account seeing A's append: on
// Dovecot (IMAP IDLE) and on Cyrus (IMAP IDLE, and JMAP).
func BenchmarkNotify(b *testing.B) {
	for _, server := range []string{"dovecot-imap", "cyrus-imap", "cyrus-jmap"} {
		b.Run(server, func(b *testing.B) { benchNotify(b, server) })
	}
}

func benchNotify(b *testing.B, server string) {
	var h Hub
	var raw func(context.Context) (hub.Store, error)
	switch server {
	case "dovecot-imap", "cyrus-imap":
		key := "FERRY_DOVECOT_ADDR"
		if server == "cyrus-imap" {
			key = "FERRY_CYRUS_IMAP_ADDR"
		}
		addr := realtest.Getenv(key)
		if addr == "" {
			realtest.Unavailable(b, "no "+key)
		}
		host, port, _ := strings.Cut(addr, ":")
		var p int
		fmt.Sscan(port, &p)
		h = IMAPHub(host, p, "heidi", "heidipw")
		raw = func(ctx context.Context) (hub.Store, error) {
			return imaphub.Open(ctx, imaphub.Config{Addr: addr, User: "heidi", Password: "heidipw"})
		}
	default:
		url := realtest.Getenv("FERRY_CYRUS_JMAP_URL")
		if url == "" {
			realtest.Unavailable(b, "no Cyrus JMAP")
		}
		h = JMAPBasicHub(url, "heidi", "heidipw")
		raw = func(ctx context.Context) (hub.Store, error) {
			return jmaphub.Open(ctx, jmaphub.Config{SessionURL: url, Username: "heidi", Password: "heidipw"})
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	a, err := Open(ctx, filepath.Join(dir, "a"), Options{Hub: h, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	c, _ := a.NewCollection("Notify")
	a.Sync(ctx)
	bd, err := Restore(ctx, filepath.Join(dir, "b"), a.ShowBackupKey(), Options{Hub: h, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer bd.Close()
	bd.Sync(ctx)
	w, err := raw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rawSeen := make(chan time.Time, 64)
	go w.Watch(ctx, func() {
		select {
		case rawSeen <- time.Now():
		default:
		}
	})
	go bd.Run(ctx)
	time.Sleep(time.Second)
	id, _ := a.NewRecord(c, map[string][]byte{"n": []byte("0")})
	a.Sync(ctx)
	var ferry, srv []time.Duration
	for i := 0; b.Loop(); i++ {
		time.Sleep(300 * time.Millisecond) // let both watchers go idle
		for len(rawSeen) > 0 {
			<-rawSeen
		}
		changed := bd.Changed()
		a.SetString(c, id, "n", fmt.Sprint(i))
		start := time.Now()
		if _, err := a.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case <-changed:
			ferry = append(ferry, time.Since(start))
		case <-time.After(30 * time.Second):
			b.Fatal("B not notified")
		}
		select {
		case t := <-rawSeen:
			srv = append(srv, t.Sub(start))
		case <-time.After(10 * time.Second):
		}
	}
	report(b, "ferry", ferry)
	report(b, "server", srv)
}

func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(ds[len(ds)*95/100].Microseconds())/1000, name+"-p95-ms")
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "tandem-bench-") }
