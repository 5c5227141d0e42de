package tandem

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The flood figures of issue 23 (docs/benchmarks/tandem-flood.md): heavy,
// so run only with FERRY_FLOOD_FIGURES=1; FERRY_FLOOD_SCALE=0.2 runs a
// fifth of each flood. FERRY_FLOOD_HUB=dovecot runs them on real Dovecot
// (user chloe), which keeps the flood out of the test's heap: on memhub
// the hub's copy of the flood is live in the same heap, and the garbage
// collector lets the heap grow in proportion to it, so the peak there
// says little about the device.
//
//	FERRY_FLOOD_FIGURES=1 FERRY_FLOOD_HUB=dovecot go test -run TestFloodFigures -v ./tandem
func TestFloodFigures(t *testing.T) {
	if os.Getenv("FERRY_FLOOD_FIGURES") != "1" {
		t.Skip("set FERRY_FLOOD_FIGURES=1 to measure the floods of issue 23")
	}
	scale := 1.0
	if s, err := strconv.ParseFloat(os.Getenv("FERRY_FLOOD_SCALE"), 64); err == nil && s > 0 {
		scale = s
	}
	n := func(k int) int { return max(1, int(float64(k)*scale)) }
	floods := []struct {
		name string
		post func(t *testing.T, s *floodScene)
	}{
		{fmt.Sprintf("held %d x 900 KB", n(250)), func(t *testing.T, s *floodScene) { s.held(t, n(250), 490<<10) }},
		{fmt.Sprintf("channel junk %d x 900 KB", n(300)), func(t *testing.T, s *floodScene) { s.junk(t, n(300), 670<<10) }},
		{fmt.Sprintf("closed-invite requests %d", n(5000)), func(t *testing.T, s *floodScene) { s.joins(t, n(5000)) }},
		{fmt.Sprintf("replayed key requests %d", n(2000)), func(t *testing.T, s *floodScene) { s.keyreqs(t, n(2000)) }},
		{fmt.Sprintf("mixed junk %d", n(20000)), func(t *testing.T, s *floodScene) {
			k := n(20000) / 4
			s.held(t, k, 200)
			s.junk(t, k, 200)
			s.joins(t, k)
			s.keyreqs(t, k)
		}},
	}
	for _, f := range floods {
		t.Run(f.name, func(t *testing.T) {
			s := newFloodScene(t)
			f.post(t, s)
			s.measure(t, f.name)
		})
	}
}

// floodScene is an owner with a shared collection (one member, a closed
// invite), on a hub whose fetches by the owner are counted.
type floodScene struct {
	h       *hostile
	dir     string
	fetched atomic.Int64 // envelope bytes the owner downloaded
	added   sync.Map     // channel → appends by the owner
	ben     *Device
	invID   [16]byte
	inv     *suite.Invite
}

type floodMeter struct {
	hub.Store
	s *floodScene
}

func (c *floodMeter) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	bodies, err := c.Store.Fetch(ctx, ids)
	for _, b := range bodies {
		c.s.fetched.Add(int64(len(b.Envelope)))
	}
	return bodies, err
}

func (c *floodMeter) Append(ctx context.Context, ch string, env []byte) (hub.ID, error) {
	v, _ := c.s.added.LoadOrStore(ch, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	return c.Store.Append(ctx, ch, env)
}

func newFloodScene(t *testing.T) *floodScene {
	s := &floodScene{}
	srv := memhub.NewServer()
	open := func(context.Context) (hub.Store, error) { return srv.Open(), nil }
	rawOpen := open
	if os.Getenv("FERRY_FLOOD_HUB") == "dovecot" {
		h := dovecotHub(t, "chloe") // emptied
		// The flooder's appends are not rationed; the devices' are, as
		// Open would (DefaultBudget).
		cfg := imaphub.Config{Addr: h.d.Host + ":" + strconv.Itoa(h.d.Port), User: h.d.User, Password: h.d.Password, Budget: DefaultBudget()}
		open = func(ctx context.Context) (hub.Store, error) { return imaphub.Open(ctx, cfg) }
		flooder := cfg
		flooder.Budget = hub.NewRateBudget(hub.Rate{}, hub.Rate{})
		rawOpen = func(ctx context.Context) (hub.Store, error) { return imaphub.Open(ctx, flooder) }
	}
	opts := func(name string) Options {
		if name == "Jesper" {
			return Options{Name: name, Store: func(ctx context.Context) (hub.Store, error) {
				st, err := open(ctx)
				if err != nil {
					return nil, err
				}
				return &floodMeter{Store: st, s: s}, nil
			}}
		}
		return Options{Name: name, Store: open}
	}
	raw, err := rawOpen(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	s.h = newHostile(t, opts, raw)
	s.dir = s.h.owner.dir
	s.ben = s.h.admit("Ben")
	_, s.invID, s.inv = s.h.invite(InviteOptions{Link: true})
	if _, err := s.h.owner.CloseInvites(s.h.c); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.h.owner)
	return s
}

func (s *floodScene) post(t *testing.T, tag string, env []byte) {
	if _, err := s.h.raw.Append(t.Context(), tag, env); err != nil {
		t.Fatal(err)
	}
}

// held posts k writes by the member Ben (a reader can do the same) naming
// roster statements that do not exist, each with a value of size bytes.
func (s *floodScene) held(t *testing.T, k, size int) {
	tag, key := s.h.epochChannel()
	id := suite.NewIdentity(s.ben.us)
	v := make([]byte, size)
	for i := range k {
		rand.Read(v)
		var ref [32]byte
		rand.Read(ref[:])
		var rec [16]byte
		rand.Read(rec[:])
		st := record.NewState(record.NewValidator(record.Rules{Scope: [16]byte(s.h.c)}))
		w, _, err := st.Build(&record.Writer{Key: id.SignKey, Device: suite.DeviceID{byte(i)}, Clock: record.NewClock(suite.HLC{}, nil), Ref: ref},
			record.Change{Record: rec, Field: "title", Op: suite.OpAssign, Value: v})
		if err != nil {
			t.Fatal(err)
		}
		pt, err := client.EncodeRecordPayload(&client.RecordPayload{Record: rec, Writes: []client.SignedWrite{{Body: w.Body(), Sig: w.Sig()}}})
		if err != nil {
			t.Fatal(err)
		}
		env, err := suite.SealEnvelope(suite.KindRecord, key, tag, pt, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s.post(t, tag, env)
	}
}

// junk posts k envelopes of size bytes under a wrong key in the epoch
// channel (its tag is visible to anyone on the hub).
func (s *floodScene) junk(t *testing.T, k, size int) {
	tag := s.h.epochTag()
	var wrong [32]byte
	rand.Read(wrong[:])
	b := make([]byte, size)
	for range k {
		rand.Read(b)
		env, err := suite.SealEnvelope(suite.KindRecord, wrong, tag, b, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s.post(t, tag, env)
	}
}

// joins posts k join requests from new identities on the closed invite.
func (s *floodScene) joins(t *testing.T, k int) {
	for i := range k {
		s.h.postJoin(newIdentity(t), s.invID, s.inv, fmt.Sprint("junk ", i), s.inv.SignKey, "")
	}
}

// keyreqs posts k copies of Ben's key request in the epoch channel.
func (s *floodScene) keyreqs(t *testing.T, k int) { s.h.postKeyReqs(s.ben, k) }

// measure makes an edit on the owner, syncs through the flood and again,
// and logs the figures.
func (s *floodScene) measure(t *testing.T, name string) {
	o := s.h.owner
	if _, err := o.NewRecord(s.h.c, map[string][]byte{"title": []byte("own edit")}); err != nil {
		t.Fatal(err)
	}
	tag := s.h.epochTag()
	appendsBefore := s.appends(tag)
	benInbox := suite.NewIdentity(s.ben.us).InboxTag
	benBefore := s.appends(benInbox)
	onHub, err := s.h.raw.Changes(t.Context(), nil) // a disturbed run (the account emptied by another test) shows here
	if err != nil {
		t.Fatal(err)
	}
	dbBefore := s.dbSize()
	base := heapNow()
	s.fetched.Store(0)
	peak := sampleHeap()
	start := time.Now()
	rep1, err := o.Sync(t.Context())
	d1 := time.Since(start)
	top := peak()
	if err != nil {
		t.Fatalf("sync through the flood: %v", err)
	}
	f1 := s.fetched.Swap(0)
	start = time.Now()
	rep2, err := o.Sync(t.Context())
	d2 := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	f2 := s.fetched.Load()
	delivered := s.appends(tag) > appendsBefore
	dbAfter := s.dbSize()
	t.Logf("FIGURES | %s | %d messages on the hub | next sync %.2f s | peak heap +%.1f MiB | device.db +%.1f MiB | fetched %.1f MiB | second sync %.2f s, re-fetched %d bytes | own edit delivered %v | declined %d, answers to the member %d, held %d, rejected %d, published %d/%d",
		name, len(onHub.Added), d1.Seconds(), mib(top-base), mib(dbAfter-dbBefore), mib(f1), d2.Seconds(), f2, delivered, rep1.Declined, s.appends(benInbox)-benBefore, rep1.Held, rep1.Rejected, rep1.Published, rep2.Published)
	if !delivered || f2 != 0 {
		t.Errorf("%s: own edit delivered %v, %d bytes re-fetched on the second sync", name, delivered, f2)
	}
}

func (s *floodScene) appends(tag string) int64 {
	if v, ok := s.added.Load(tag); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (s *floodScene) dbSize() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(filepath.Join(s.dir, dbFile+suffix)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapNow is the live heap after a collection.
func heapNow() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: heapSample[0].Name}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// sampleHeap samples the heap every few milliseconds until the returned
// function is called, which returns the highest sample.
func sampleHeap() func() int64 {
	var top atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: heapSample[0].Name}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(stop); <-done; return top.Load() }
}
