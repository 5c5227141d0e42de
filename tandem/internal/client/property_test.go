package client

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// TestRandomSchedulesConverge: three devices of one user make random edits
// (assigns, set adds and removes, deletes, new records) while offline for
// random stretches and sync in random order; after everyone syncs twice,
// all hold the same state, byte for byte.
func TestRandomSchedulesConverge(t *testing.T) {
	runs := 30
	if testing.Short() {
		runs = 5
	}
	for seed := range uint64(runs) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomSchedule(t, seed) })
	}
}

func randomSchedule(t *testing.T, seed uint64) {
	rng := mrand.New(mrand.NewPCG(seed, 7))
	srv := memhub.NewServer()
	us := must[[32]byte](t)(NewSecret(nil))
	devs := []*Device{newDevice(t, us, srv.Open()), newDevice(t, us, srv.Open()), newDevice(t, us, srv.Open())}
	c := must[CollectionID](t)(devs[0].CreateCollection("List"))
	syncT(t, devs[0])
	for _, d := range devs[1:] {
		syncT(t, d)
	}
	var recs [][16]byte
	for range 4 {
		recs = append(recs, must[[16]byte](t)(devs[0].NewRecordID()))
	}
	fields := []string{"title", "qty"}
	elems := [][]byte{[]byte("a"), []byte("b")}
	for range 60 {
		d := devs[rng.IntN(len(devs))]
		rec := recs[rng.IntN(len(recs))]
		var err error
		switch rng.IntN(10) {
		case 0:
			syncT(t, d)
			continue
		case 1:
			err = d.Delete(c, rec)
		case 2, 3:
			err = d.Add(c, rec, "tags", elems[rng.IntN(2)])
		case 4, 5:
			err = d.Remove(c, rec, "tags", elems[rng.IntN(2)])
		default:
			err = d.Assign(c, rec, fields[rng.IntN(2)], []byte{byte(rng.IntN(256))})
		}
		if err != nil && !isDeletedErr(err) {
			t.Fatalf("write: %v", err)
		}
	}
	for range 2 {
		for _, i := range rng.Perm(len(devs)) {
			if rep := syncT(t, devs[i]); len(rep.Rejected) != 0 {
				t.Fatalf("honest messages rejected: %v", rep.Rejected)
			}
		}
	}
	want := stateBytes(t, devs[0], c)
	for i, d := range devs[1:] {
		if !bytes.Equal(stateBytes(t, d, c), want) {
			t.Fatalf("device %d differs from device 0", i+1)
		}
	}
}

func isDeletedErr(err error) bool { return errors.Is(err, record.ErrDeleted) }

// buildWrite signs an assign to rec's title by id under statement ref.
func buildWrite(t *testing.T, c CollectionID, id *suite.Identity, ref [32]byte, rec [16]byte) *record.Write {
	t.Helper()
	st := record.NewState(record.NewValidator(record.Rules{Scope: c}))
	wr := &record.Writer{Key: id.SignKey, Device: suite.DeviceID{9}, Clock: record.NewClock(suite.HLC{}, nil), Ref: ref}
	w, _, err := st.Build(wr, record.Change{Record: rec, Field: "title", Op: suite.OpAssign, Value: []byte("held")})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestAnyDeliveryOrder: a device reading every message of the hub in
// reverse order, data before the roster and the membership last, holds
// what it cannot judge yet and ends with the same state.
func TestAnyDeliveryOrder(t *testing.T) {
	f := newFixture(t)
	if err := f.a.Assign(f.c, f.milk, "qty", []byte("7")); err != nil {
		t.Fatal(err)
	}
	syncT(t, f.a)
	bodies := messages(t, f.srv)
	for _, order := range []string{"reverse", "shuffled"} {
		t.Run(order, func(t *testing.T) {
			msgs := slices.Clone(bodies)
			if order == "reverse" {
				slices.Reverse(msgs)
			} else {
				mrand.New(mrand.NewPCG(1, 2)).Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
			}
			srv := serverWith(t, msgs)
			d := newDevice(t, f.us, srv.Open())
			rep := syncT(t, d)
			if len(rep.Rejected) != 0 || rep.Held != 0 {
				t.Fatalf("report %+v", rep)
			}
			if !bytes.Equal(stateBytes(t, d, f.c), stateBytes(t, f.a, f.c)) {
				t.Fatal("delivery order changed the state")
			}
		})
	}
}

// TestHeldUntilStatementArrives: a write naming a roster statement the
// device does not know is held, not rejected, and stays held across syncs.
func TestHeldUntilStatementArrives(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	// A write of the user under a statement nobody has seen.
	w := buildWrite(t, f.c, f.a.id, [32]byte{42}, f.milk)
	sealInject(t, f, ch, &RecordPayload{Record: f.milk, Writes: signedWrites(w)})
	before := stateBytes(t, f.b, f.c)
	for range 2 {
		rep := syncT(t, f.b)
		if rep.Held != 1 || len(rep.Rejected) != 0 {
			t.Fatalf("report %+v, want one held message", rep)
		}
	}
	if !bytes.Equal(before, stateBytes(t, f.b, f.c)) {
		t.Fatal("a held write changed the state")
	}
}

// FuzzSyncMessage: any plaintext, sealed as a kind-1 message in a followed
// channel, is merged or rejected without panicking and without error from
// Sync; a rejected or held message leaves the state as it was.
func FuzzSyncMessage(f *testing.F) {
	base := newFuzzBase(f)
	for _, b := range base.plaintexts {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte(`{"inventory":{"epoch":"AA","part":0,"parts":1,"bytes":"AA"}}`), false)
	f.Fuzz(func(t *testing.T, pt []byte, home bool) {
		srv := serverWith(t, base.bodies)
		key, tag := base.ch.key, base.ch.tag
		if home {
			key, tag = base.homeKey, base.homeTag
		}
		env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, key, tag, pt, rand.Reader))
		must[hub.ID](t)(srv.Open().Append(t.Context(), tag, env))
		d := newDevice(t, base.us, srv.Open())
		rep, err := d.Sync(t.Context())
		if err != nil {
			t.Fatalf("Sync failed on a peer's message: %v", err)
		}
		if len(rep.Rejected) > 0 || rep.Held > 0 {
			if !bytes.Equal(stateBytes(t, d, base.c), base.state) {
				t.Fatal("a rejected or held message changed the state")
			}
		}
	})
}

// serverWith returns a new hub holding msgs, appended in the order given.
func serverWith(t *testing.T, msgs []hub.Body) *memhub.Server {
	t.Helper()
	srv := memhub.NewServer()
	s := srv.Open()
	if err := s.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, b := range msgs {
		must[hub.ID](t)(s.Append(t.Context(), b.Channel, b.Envelope))
	}
	return srv
}

type fuzzBase struct {
	us         [32]byte
	c          CollectionID
	ch         *channel
	homeKey    [32]byte
	homeTag    string
	bodies     []hub.Body
	plaintexts [][]byte
	state      []byte
}

func newFuzzBase(f *testing.F) *fuzzBase {
	srv := memhub.NewServer()
	us, _ := NewSecret(nil)
	a, err := New(Config{Secret: us, Hub: srv.Open(), Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	c, err := a.CreateCollection("Fuzz")
	if err != nil {
		f.Fatal(err)
	}
	rec, _ := a.NewRecordID()
	if err := a.Assign(c, rec, "title", []byte("x")); err != nil {
		f.Fatal(err)
	}
	if _, err := a.Sync(f.Context()); err != nil {
		f.Fatal(err)
	}
	b := &fuzzBase{us: us, c: c, homeKey: a.id.HomeKey, homeTag: a.id.HomeTag}
	for _, ch := range a.chans {
		if ch.coll != nil {
			b.ch = ch
		}
	}
	s := srv.Open()
	chg, err := s.Changes(f.Context(), nil)
	if err != nil {
		f.Fatal(err)
	}
	var ids []hub.ID
	for _, x := range chg.Added {
		ids = append(ids, x.ID)
	}
	if b.bodies, err = s.Fetch(f.Context(), ids); err != nil {
		f.Fatal(err)
	}
	for _, body := range b.bodies {
		key := b.homeKey
		if body.Channel == b.ch.tag {
			key = b.ch.key
		}
		_, pt, err := suite.OpenEnvelope(key, body.Channel, body.Envelope)
		if err != nil {
			f.Fatal(err)
		}
		b.plaintexts = append(b.plaintexts, pt)
	}
	snap, _ := a.Snapshot(c)
	if b.state, err = snap.MarshalBinary(); err != nil {
		f.Fatal(err)
	}
	return b
}
