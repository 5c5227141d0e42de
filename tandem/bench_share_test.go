package tandem

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
)

// Sharing and rotation benchmarks on real servers
// (docs/benchmarks/tandem-device.md).
//
//	BenchmarkShare/<server>: from "Share" (a QR invite) on the owner's
//	device to the list appearing on the joiner's device, both under Run —
//	next to BenchmarkNotify, one plain write's notification latency.
//	BenchmarkRotation: removing a member of a 10,000-record collection on
//	Dovecot until the member's device is on the new epoch, vs the first
//	publish of the same collection; bytes uploaded and messages destroyed.

func benchHub(b *testing.B, server, user string) Hub {
	switch server {
	case "dovecot":
		addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
		if addr == "" {
			realtest.Unavailable(b, "no Dovecot")
		}
		host, port, _ := strings.Cut(addr, ":")
		var p int
		fmt.Sscan(port, &p)
		return IMAPHub(host, p, user, user+"pw")
	default:
		url := realtest.Getenv("FERRY_CYRUS_JMAP_URL")
		if url == "" {
			realtest.Unavailable(b, "no Cyrus")
		}
		return JMAPBasicHub(url, user, user+"pw")
	}
}

func BenchmarkShare(b *testing.B) {
	for _, server := range []string{"dovecot", "cyrus"} {
		b.Run(server, func(b *testing.B) {
			h := benchHub(b, server, "heidi")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := func(n string) Options {
				return Options{Name: n, Hub: h, Logger: quiet(), Budget: hub.NewRateBudget(hub.Rate{}, hub.Rate{})}
			}
			owner, err := Open(ctx, filepath.Join(b.TempDir(), "owner"), opts("Jesper"))
			if err != nil {
				b.Fatal(err)
			}
			defer owner.Close()
			go owner.Run(ctx)
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				c, _ := owner.NewCollection(fmt.Sprint("House ", i))
				owner.NewRecord(c, map[string][]byte{"title": []byte("Paint")})
				owner.Sync(ctx)
				joiner, err := Open(ctx, filepath.Join(b.TempDir(), fmt.Sprint("j", i)), opts("Aimee"))
				if err != nil {
					b.Fatal(err)
				}
				jctx, jcancel := context.WithCancel(ctx)
				go joiner.Run(jctx)
				start := time.Now()
				qr, err := owner.Invite(c, InviteOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := joiner.Join(ctx, qr.Payload, "Aimee"); err != nil {
					b.Fatal(err)
				}
				for {
					if rs, err := joiner.Records(c); err == nil && len(rs) == 1 {
						break
					}
					if time.Since(start) > time.Minute {
						b.Fatal("the list did not appear within a minute")
					}
					time.Sleep(5 * time.Millisecond)
				}
				took = append(took, time.Since(start))
				jcancel()
				joiner.Close()
			}
			report(b, "share-to-list", took)
		})
	}
}

// countingStore counts the bytes a device appends.
type countingStore struct {
	hub.Store
	bytes *atomic.Int64
}

func (s countingStore) Append(ctx context.Context, ch string, env []byte) (hub.ID, error) {
	s.bytes.Add(int64(len(env)))
	return s.Store.Append(ctx, ch, env)
}

func BenchmarkRotation(b *testing.B) {
	addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
	if addr == "" {
		realtest.Unavailable(b, "no Dovecot")
	}
	var sent atomic.Int64
	cfg := imaphub.Config{Addr: addr, User: "heidi", Password: "heidipw", Budget: hub.NewRateBudget(hub.Rate{}, hub.Rate{})}
	store := func(ctx context.Context) (hub.Store, error) {
		s, err := imaphub.Open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return countingStore{s, &sent}, nil
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		owner, err := Open(ctx, filepath.Join(dir, "owner"), Options{Name: "Jesper", Store: store, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		owner.db.SQL().Exec("PRAGMA synchronous = OFF") // setup only
		c, _ := owner.NewCollection("Big")
		val := make([]byte, 16)
		for i := 0; i < benchRecords; i++ {
			rand.Read(val)
			owner.NewRecord(c, map[string][]byte{"title": val})
		}
		owner.db.SQL().Exec("PRAGMA synchronous = FULL")
		sent.Store(0)
		t0 := time.Now()
		if _, err := owner.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		publish, publishBytes := time.Since(t0), sent.Load()
		member, _ := Open(ctx, filepath.Join(dir, "member"), Options{Name: "Aimee", Store: store, Logger: quiet()})
		leaver, _ := Open(ctx, filepath.Join(dir, "leaver"), Options{Name: "Ben", Store: store, Logger: quiet()})
		for _, d := range []*Device{member, leaver} {
			qr, _ := owner.Invite(c, InviteOptions{})
			owner.Sync(ctx)
			d.Join(ctx, qr.Payload, d.opts.Name)
			d.Sync(ctx)
			owner.Sync(ctx)
			d.Sync(ctx)
		}
		member.Sync(ctx)
		sent.Store(0)
		b.StartTimer()
		t1 := time.Now()
		if err := owner.RemoveMember(ctx, c, leaver.UserID()); err != nil {
			b.Fatal(err)
		}
		for !member.eng.Rotating([16]byte(c)) {
			if _, err := member.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			if ms, _ := member.Members(c); len(ms) == 2 {
				break
			}
		}
		rotation := time.Since(t1)
		b.StopTimer()
		b.ReportMetric(rotation.Seconds()/publish.Seconds(), "x-first-publish")
		b.ReportMetric(float64(sent.Load())/float64(publishBytes), "bytes-x-first-publish")
		b.ReportMetric(float64(sent.Load())/1e6, "MB-uploaded")
		b.ReportMetric(publish.Seconds(), "publish-s")
		b.ReportMetric(rotation.Seconds(), "rotation-s")
		owner.Close()
		member.Close()
		leaver.Close()
		b.StartTimer()
	}
}
