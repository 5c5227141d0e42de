package client

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Issue 23: what a hub participant posts costs the device no more than a
// fixed bound, and what a bound refused is not downloaded again. Each test
// runs on memhub and on real Dovecot.

// floodHub opens connections to one empty hub account.
type floodHub func(t *testing.T) hub.Store

func floodHubs(t *testing.T) map[string]floodHub {
	srv := memhub.NewServer()
	return map[string]floodHub{
		"memhub":  func(*testing.T) hub.Store { return srv.Open() },
		"dovecot": dovecotFlood(t),
	}
}

// dovecotFlood returns a floodHub on Dovecot user amber, emptied once.
func dovecotFlood(t *testing.T) floodHub {
	var once sync.Once
	return func(t *testing.T) hub.Store {
		addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
		var pass string
		for _, up := range strings.Fields(realtest.Getenv("FERRY_DOVECOT_USERS")) {
			if u, p, ok := strings.Cut(up, ":"); ok && u == "amber" {
				pass = p
			}
		}
		if addr == "" || pass == "" {
			realtest.Unavailable(t, "FERRY_DOVECOT_ADDR / FERRY_DOVECOT_USERS with user amber (run scripts/setup.d/10-dovecot.sh)")
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		s, err := imaphub.Open(ctx, imaphub.Config{Addr: addr, User: "amber", Password: pass})
		if err != nil {
			t.Fatalf("dovecot: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		once.Do(func() { emptyStore(t, s) })
		return s
	}
}

func emptyStore(t *testing.T, s hub.Store) {
	t.Helper()
	if err := s.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		ids = append(ids, a.ID)
	}
	if err := s.Destroy(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
}

// flood is an owner device with a collection, a second device of the same
// user (the one under attack) and the epoch channel a reader would hold.
type flood struct {
	owner, victim *Device
	c             CollectionID
	ch            *channel
	raw           hub.Store
}

func newFlood(t *testing.T, open floodHub, cfg Config) *flood {
	t.Helper()
	us := must[[32]byte](t)(NewSecret(nil))
	f := &flood{raw: open(t)}
	f.owner = must[*Device](t)(New(Config{Secret: us, Hub: open(t), Name: "Owner", Logger: quiet()}))
	f.c = must[CollectionID](t)(f.owner.CreateCollection("House"))
	syncT(t, f.owner)
	cfg.Secret, cfg.Hub, cfg.Name, cfg.Logger = us, open(t), "Victim", quiet()
	f.victim = must[*Device](t)(New(cfg))
	syncT(t, f.victim)
	f.owner.mu.Lock()
	for _, ch := range f.owner.chans {
		if ch.coll != nil && ch.coll.id == f.c {
			f.ch = ch
		}
	}
	f.owner.mu.Unlock()
	return f
}

// post appends envelope to the epoch channel as any participant can.
func (f *flood) post(t *testing.T, env []byte) {
	t.Helper()
	must[hub.ID](t)(f.raw.Append(t.Context(), f.ch.tag, env))
}

// postHeld posts n messages, each one write of about size bytes by a
// stranger naming a roster statement that does not exist: each is held
// (§8.3) until the bound refuses it.
func (f *flood) postHeld(t *testing.T, n, size int) {
	t.Helper()
	x := suite.NewIdentity(must[[32]byte](t)(NewSecret(nil)))
	value := make([]byte, size)
	for i := range n {
		rand.Read(value)
		var ref [32]byte
		rand.Read(ref[:])
		rec := must[[16]byte](t)(f.owner.NewRecordID())
		st := record.NewState(record.NewValidator(record.Rules{Scope: f.c}))
		wr := &record.Writer{Key: x.SignKey, Device: suite.DeviceID{byte(i)}, Clock: record.NewClock(suite.HLC{}, nil), Ref: ref}
		w, _, err := st.Build(wr, record.Change{Record: rec, Field: "title", Op: suite.OpAssign, Value: []byte(suite.B32(value))})
		if err != nil {
			t.Fatal(err)
		}
		pt := must[[]byte](t)(EncodeRecordPayload(&RecordPayload{Record: rec, Writes: signedWrites(w)}))
		f.post(t, must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, f.ch.key, f.ch.tag, pt, rand.Reader)))
	}
}

// honestEdit makes an edit on the owner and syncs it; it returns the record.
func (f *flood) honestEdit(t *testing.T, title string) [16]byte {
	t.Helper()
	rec := must[[16]byte](t)(f.owner.NewRecordID())
	if err := f.owner.Assign(f.c, rec, "title", []byte(title)); err != nil {
		t.Fatal(err)
	}
	syncT(t, f.owner)
	return rec
}

func (f *flood) victimHas(t *testing.T, rec [16]byte, title string) bool {
	t.Helper()
	s := must[*record.State](t)(f.victim.Snapshot(f.c))
	for _, v := range s.Values(rec, "title") {
		if string(v.Value) == title {
			return true
		}
	}
	return false
}

// A held-message flood stays within the byte bound of its collection; the
// rest is refused, remembered, and not downloaded again; an honest edit
// posted during the flood arrives (defect 1).
func TestHeldFloodBoundedByBytes(t *testing.T) {
	for name, open := range floodHubs(t) {
		t.Run(name, func(t *testing.T) {
			const bound = 256 << 10
			f := newFlood(t, open, Config{MaxHeldBytesPerCollection: bound})
			f.postHeld(t, 12, 40<<10)
			rec := f.honestEdit(t, "Paint the door")
			rep := syncT(t, f.victim)
			f.victim.mu.Lock()
			collN, collBytes, _, _ := f.victim.heldUsage(f.victim.colls[f.c])
			f.victim.mu.Unlock()
			if collBytes > bound || collN == 0 || rep.OverBound == 0 {
				t.Fatalf("held %d messages of %d bytes (bound %d), refused %d: %+v", collN, collBytes, bound, rep.OverBound, rep)
			}
			if !f.victimHas(t, rec, "Paint the door") {
				t.Fatal("the honest edit did not arrive during the flood")
			}
			if rep := syncT(t, f.victim); rep.Fetched != 0 {
				t.Fatalf("second sync downloaded %d messages again, want 0", rep.Fetched)
			}
		})
	}
}

// fetchMeter records the largest number of envelope bytes one Fetch
// returned.
type fetchMeter struct {
	hub.Store
	mu       sync.Mutex
	maxBytes int
	maxN     int // messages in that call
}

func (m *fetchMeter) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	bodies, err := m.Store.Fetch(ctx, ids)
	n := 0
	for _, b := range bodies {
		n += len(b.Envelope)
	}
	m.mu.Lock()
	if n > m.maxBytes {
		m.maxBytes, m.maxN = n, len(bodies)
	}
	m.mu.Unlock()
	return bodies, err
}

// Junk in a followed channel is downloaded in batches bounded by bytes, not
// 256 messages at a time whatever their size (defect 3).
func TestFetchBatchesBoundedByBytes(t *testing.T) {
	for name, open := range floodHubs(t) {
		t.Run(name, func(t *testing.T) {
			const batch = 256 << 10
			meter := &fetchMeter{}
			f := newFlood(t, open, Config{FetchBatchBytes: batch})
			meter.Store = f.victim.store
			f.victim.store = meter
			junk := make([]byte, 60<<10)
			var wrong [32]byte
			rand.Read(wrong[:])
			for range 12 {
				rand.Read(junk)
				f.post(t, must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, wrong, f.ch.tag, junk, rand.Reader)))
			}
			rec := f.honestEdit(t, "Fix the tap")
			rep := syncT(t, f.victim)
			if len(rep.Rejected) != 12 || !f.victimHas(t, rec, "Fix the tap") {
				t.Fatalf("junk: %+v", rep)
			}
			if meter.maxBytes > batch && meter.maxN > 1 {
				t.Fatalf("one Fetch downloaded %d messages of %d bytes, bound %d", meter.maxN, meter.maxBytes, batch)
			}
		})
	}
}

// A message the hub says is over the message limit is not downloaded
// (§10.6).
func TestOversizedMessageNotDownloaded(t *testing.T) {
	srv := memhub.NewServer()
	f := newFlood(t, func(*testing.T) hub.Store { return srv.Open() }, Config{})
	big := "Tandem-Channel: " + f.ch.tag + "\r\nTandem-Version: 1\r\n\r\n" + strings.Repeat("QUFB", hub.MaxMessage/4+1)
	srv.Inject(hub.Folder, []byte(big))
	rep := syncT(t, f.victim)
	if rep.Fetched != 0 || rep.Ignored != 1 {
		t.Fatalf("oversized message: %+v, want ignored without a download", rep)
	}
}

// Fake inventory fragments past the fragment bound are refused once and
// not downloaded again on every sync (defect 2).
func TestFragmentFloodNotRefetched(t *testing.T) {
	for name, open := range floodHubs(t) {
		t.Run(name, func(t *testing.T) {
			const bound = 256 << 10
			f := newFlood(t, open, Config{MaxFragmentBytesPerCollection: bound})
			var epoch [32]byte
			f.victim.View(f.c, func(_ *record.State, r *roster.Roster, _ roster.Status) { epoch = r.Epoch() })
			// Fragments of a later epoch nobody announced, posted in a
			// channel the victim follows, tagged with its epoch so the
			// chain holds them while it waits.
			// Twelve parts of 40 KB pass the byte bound; six versions of
			// one small part pass the chain's versions-per-part bound.
			for i := range 18 {
				b := make([]byte, 40<<10)
				part := i
				if i >= 12 {
					b, part = b[:100], 999
				}
				rand.Read(b)
				fr := &roster.Fragment{Epoch: epoch, Part: part, Parts: 1000, Bytes: b}
				pt := must[[]byte](t)(fr.Encode())
				f.post(t, must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, f.ch.key, f.ch.tag, pt, rand.Reader)))
			}
			rec := f.honestEdit(t, "Sweep")
			rep := syncT(t, f.victim)
			f.victim.mu.Lock()
			used := f.victim.colls[f.c].chain.FragmentBytes()
			f.victim.mu.Unlock()
			if used == 0 || used > bound || rep.OverBound == 0 || !f.victimHas(t, rec, "Sweep") {
				t.Fatalf("fragments held %d bytes (bound %d): %+v", used, bound, rep)
			}
			if rep := syncT(t, f.victim); rep.Fetched != 0 {
				t.Fatalf("second sync downloaded %d messages again, want 0", rep.Fetched)
			}
		})
	}
}
