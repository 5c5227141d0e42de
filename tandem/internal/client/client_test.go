package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newDevice(t *testing.T, secret [32]byte, s hub.Store) *Device {
	t.Helper()
	d, err := New(Config{Secret: secret, Hub: s, Name: "Test", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func syncT(t *testing.T, d *Device) *SyncReport {
	t.Helper()
	rep, err := d.Sync(t.Context())
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return rep
}

func stateBytes(t *testing.T, d *Device, c CollectionID) []byte {
	t.Helper()
	s := must[*record.State](t)(d.Snapshot(c))
	return must[[]byte](t)(s.MarshalBinary())
}

// fixture: one user, device A with a collection and one record, synced;
// device B made from the same secret and synced.
type fixture struct {
	srv  *memhub.Server
	us   [32]byte
	a, b *Device
	c    CollectionID
	milk [16]byte
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{srv: memhub.NewServer()}
	f.us = must[[32]byte](t)(NewSecret(nil))
	f.a = newDevice(t, f.us, f.srv.Open())
	f.c = must[CollectionID](t)(f.a.CreateCollection("Groceries"))
	f.milk = must[[16]byte](t)(f.a.NewRecordID())
	if err := f.a.Assign(f.c, f.milk, "title", []byte("Milk")); err != nil {
		t.Fatal(err)
	}
	if err := f.a.Add(f.c, f.milk, "tags", []byte("dairy")); err != nil {
		t.Fatal(err)
	}
	syncT(t, f.a)
	f.b = newDevice(t, f.us, f.srv.Open())
	rep := syncT(t, f.b)
	if len(rep.Rejected) != 0 {
		t.Fatalf("B rejected %v", rep.Rejected)
	}
	if got := f.b.Collections(); len(got) != 1 || got[0] != f.c {
		t.Fatalf("B follows %v, want [%s]", got, f.c)
	}
	if !bytes.Equal(stateBytes(t, f.a, f.c), stateBytes(t, f.b, f.c)) {
		t.Fatal("B's state differs from A's after the first sync")
	}
	return f
}

func TestSecondDeviceFindsCollectionInHome(t *testing.T) {
	f := newFixture(t)
	if f.a.DeviceID() == f.b.DeviceID() {
		t.Fatal("two devices share a device ID")
	}
	if f.a.UID() != f.b.UID() {
		t.Fatal("same secret, different user IDs")
	}
	name := must[[]string](t)(f.b.Name(f.c))
	if !slices.Equal(name, []string{"Groceries"}) {
		t.Fatalf("name %q", name)
	}
	st := must[roster.Status](t)(f.b.Status(f.c))
	if st != roster.StatusFollowing {
		t.Fatalf("status %v", st)
	}
	// B can write too: it holds the key and is the owner.
	if err := f.b.Assign(f.c, f.milk, "qty", []byte("2")); err != nil {
		t.Fatal(err)
	}
}

func TestTwoDevicesConverge(t *testing.T) {
	f := newFixture(t)
	eggs := must[[16]byte](t)(f.b.NewRecordID())
	// Concurrent: A and B assign the same field, A removes a tag B adds again,
	// and each adds a record.
	for _, err := range []error{
		f.a.Assign(f.c, f.milk, "qty", []byte("2")),
		f.a.Remove(f.c, f.milk, "tags", []byte("dairy")),
		f.b.Assign(f.c, f.milk, "qty", []byte("3")),
		f.b.Add(f.c, f.milk, "tags", []byte("dairy")),
		f.b.Assign(f.c, eggs, "title", []byte("Eggs")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	syncT(t, f.a)
	syncT(t, f.b)
	syncT(t, f.a)
	sa, sb := stateBytes(t, f.a, f.c), stateBytes(t, f.b, f.c)
	if !bytes.Equal(sa, sb) {
		t.Fatal("states differ after both synced")
	}
	s := must[*record.State](t)(f.a.Snapshot(f.c))
	var qty []string
	for _, v := range s.Values(f.milk, "qty") {
		qty = append(qty, string(v.Value))
	}
	slices.Sort(qty)
	if !slices.Equal(qty, []string{"2", "3"}) {
		t.Fatalf("qty siblings %q, want a conflict of 2 and 3", qty)
	}
	if !s.Contains(f.milk, "tags", []byte("dairy")) {
		t.Fatal("concurrent add and remove: the add must win")
	}
	if v := s.Values(eggs, "title"); len(v) != 1 || string(v[0].Value) != "Eggs" {
		t.Fatalf("Eggs: %v", v)
	}
	// Settling the conflict from A reaches B as one value.
	if err := f.a.Assign(f.c, f.milk, "qty", []byte("4")); err != nil {
		t.Fatal(err)
	}
	syncT(t, f.a)
	syncT(t, f.b)
	sb2 := must[*record.State](t)(f.b.Snapshot(f.c))
	if v := sb2.Values(f.milk, "qty"); len(v) != 1 || string(v[0].Value) != "4" {
		t.Fatalf("after settling, qty = %v", v)
	}
}

func TestSyncIsIdempotent(t *testing.T) {
	f := newFixture(t)
	before := countMessages(t, f.srv)
	rep := syncT(t, f.a)
	rep2 := syncT(t, f.b)
	if rep.Published != 0 || rep.Applied != 0 || rep2.Applied != 0 || rep2.Fetched != 0 {
		t.Fatalf("nothing new, yet %+v / %+v", rep, rep2)
	}
	if after := countMessages(t, f.srv); after != before {
		t.Fatalf("%d messages became %d", before, after)
	}
	// A third device, reading everything from scratch, gets the same state.
	c := newDevice(t, f.us, f.srv.Open())
	syncT(t, c)
	if !bytes.Equal(stateBytes(t, c, f.c), stateBytes(t, f.a, f.c)) {
		t.Fatal("a fresh device reads a different state")
	}
}

func countMessages(t *testing.T, srv *memhub.Server) int {
	t.Helper()
	ch := must[hub.Changes](t)(srv.Open().Changes(t.Context(), nil))
	return len(ch.Added)
}

// messages returns every message on the hub with its envelope.
func messages(t *testing.T, srv *memhub.Server) []hub.Body {
	t.Helper()
	s := srv.Open()
	ch := must[hub.Changes](t)(s.Changes(t.Context(), nil))
	ids := make([]hub.ID, len(ch.Added))
	for i, a := range ch.Added {
		ids[i] = a.ID
	}
	return must[[]hub.Body](t)(s.Fetch(t.Context(), ids))
}

// inject appends envelope on channel as a new message.
func inject(t *testing.T, srv *memhub.Server, channel string, envelope []byte) {
	t.Helper()
	must[hub.ID](t)(srv.Open().Append(context.Background(), channel, envelope))
}

// collectionChannel returns the epoch channel and key of f's collection.
func (f *fixture) collectionChannel() *channel {
	f.a.mu.Lock()
	defer f.a.mu.Unlock()
	for _, ch := range f.a.chans {
		if ch.coll != nil {
			return ch
		}
	}
	return nil
}

// assertRejected syncs d and checks that exactly one message was rejected
// for reason, and that the collection's state did not change.
func assertRejected(t *testing.T, d *Device, c CollectionID, reason error) {
	t.Helper()
	before := stateBytes(t, d, c)
	homeBefore := must[[]byte](t)(d.HomeSnapshot().MarshalBinary())
	rep := syncT(t, d)
	if len(rep.Rejected) != 1 {
		t.Fatalf("rejected %d messages, want 1: %v", len(rep.Rejected), rep.Rejected)
	}
	if err := rep.Rejected[0]; !errors.Is(err, ErrRejected) || !errors.Is(err, reason) {
		t.Fatalf("rejected with %v, want %v", err, reason)
	}
	if !bytes.Equal(before, stateBytes(t, d, c)) {
		t.Fatal("a rejected message changed the collection's state")
	}
	if !bytes.Equal(homeBefore, must[[]byte](t)(d.HomeSnapshot().MarshalBinary())) {
		t.Fatal("a rejected message changed home")
	}
	// Rejection is final: the message is not judged again.
	if rep := syncT(t, d); len(rep.Rejected) != 0 {
		t.Fatalf("rejected again: %v", rep.Rejected)
	}
}

func TestTamperedEnvelopeRejected(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	for _, b := range messages(t, f.srv) {
		if b.Channel != ch.tag {
			continue
		}
		env := bytes.Clone(b.Envelope)
		env[len(env)-20] ^= 1 // a ciphertext byte
		inject(t, f.srv, ch.tag, env)
		break
	}
	assertRejected(t, f.b, f.c, suite.ErrEnvelopeAuth)
}

func TestForgedWriteRejected(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	// Someone holding the key changes a signed value: the envelope opens,
	// the signature does not verify.
	s := must[*record.State](t)(f.a.Snapshot(f.c))
	w := s.Writes(f.milk)[0]
	sw := SignedWrite{Body: w.Body(), Sig: w.Sig()}
	sw.Body.Value = []byte("Whisky")
	sw.Body.Op, sw.Body.Element, sw.Body.Field = suite.OpAssign, nil, "title"
	sealInject(t, f, ch, &RecordPayload{Record: f.milk, Writes: []SignedWrite{sw}})
	assertRejected(t, f.b, f.c, roster.ErrSignature)
}

func sealInject(t *testing.T, f *fixture, ch *channel, p *RecordPayload) {
	t.Helper()
	pt := must[[]byte](t)(EncodeRecordPayload(p))
	env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, rand.Reader))
	inject(t, f.srv, ch.tag, env)
}

func TestNonMemberWriteRejected(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	// Mallory, another user, somehow holds the epoch key and signs a valid
	// write under the genesis. The roster does not list her (§8.3).
	mallory := suite.NewIdentity(must[[32]byte](t)(NewSecret(nil)))
	st := record.NewState(record.NewValidator(record.Rules{Scope: f.c}))
	wr := &record.Writer{Key: mallory.SignKey, Device: suite.DeviceID{9}, Clock: record.NewClock(suite.HLC{}, nil), Ref: ch.epoch}
	w, _, err := st.Build(wr, record.Change{Record: f.milk, Field: "title", Op: suite.OpAssign, Value: []byte("Mallory's milk")})
	if err != nil {
		t.Fatal(err)
	}
	sealInject(t, f, ch, &RecordPayload{Record: f.milk, Writes: signedWrites(w)})
	assertRejected(t, f.b, f.c, roster.ErrNotMember)
}

func TestMalformedPayloadRejected(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	pt := []byte(`{"rec":"AAAAAAAAAAAAAAAAAAAAAA","rec":"AAAAAAAAAAAAAAAAAAAAAA","writes":[]}`)
	env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, rand.Reader))
	inject(t, f.srv, ch.tag, env)
	assertRejected(t, f.b, f.c, ErrPayload)
}

func TestHomeWriteByAnotherUserRejected(t *testing.T) {
	f := newFixture(t)
	// A write in home must be signed with the user's own key (§6.2), even
	// if it is sealed with the home key.
	mallory := suite.NewIdentity(must[[32]byte](t)(NewSecret(nil)))
	home := record.NewState(record.NewValidator(record.Rules{Scope: f.b.id.HomeScope, Home: true}))
	changes := must[[]record.Change](t)(membershipChanges(CollectionID{1}, [32]byte{2}, [32]byte{3}))
	w, _, err := home.Build(&record.Writer{Key: mallory.SignKey, Device: suite.DeviceID{9}, Clock: record.NewClock(suite.HLC{}, nil)}, changes[0])
	if err != nil {
		t.Fatal(err)
	}
	pt := must[[]byte](t)(EncodeRecordPayload(&RecordPayload{Record: w.Record(), Writes: signedWrites(w)}))
	env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, f.b.id.HomeKey, f.b.id.HomeTag, pt, rand.Reader))
	inject(t, f.srv, f.b.id.HomeTag, env)
	assertRejected(t, f.b, f.c, ErrNotHome)
}

func TestUnknownChannelIgnored(t *testing.T) {
	f := newFixture(t)
	// A message of another channel, sealed under another key: never
	// downloaded, never an error.
	var key [32]byte
	key[0] = 7
	tag := suite.CollectionTag(key, [32]byte{1})
	env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, key, tag, []byte(`{}`), rand.Reader))
	inject(t, f.srv, tag, env)
	before := stateBytes(t, f.b, f.c)
	rep := syncT(t, f.b)
	if rep.Skipped != 1 || rep.Fetched != 0 || len(rep.Rejected) != 0 {
		t.Fatalf("report %+v, want one skipped message and nothing fetched", rep)
	}
	if !bytes.Equal(before, stateBytes(t, f.b, f.c)) {
		t.Fatal("state changed")
	}
}

func TestUnknownVersionIgnored(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	// An envelope of version 2 in a followed channel: ignored without
	// error (§15).
	env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, []byte(`{}`), rand.Reader))
	env[4] = 2
	raw := "From: Tandem <tandem@invalid>\r\nSubject: tandem\r\nMIME-Version: 1.0\r\n" +
		"Tandem-Version: 1\r\nTandem-Channel: " + ch.tag + "\r\n" +
		"Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n\r\n" + hub.EncodeBody(env)
	f.srv.Inject(hub.Folder, []byte(raw))
	// And a valid envelope under a Tandem-Version header of 2.
	good := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, []byte(`{}`), rand.Reader))
	raw2 := strings.Replace(raw, "Tandem-Version: 1", "Tandem-Version: 2", 1)
	raw2 = raw2[:strings.Index(raw2, "\r\n\r\n")+4] + hub.EncodeBody(good)
	f.srv.Inject(hub.Folder, []byte(raw2))
	before := stateBytes(t, f.b, f.c)
	rep := syncT(t, f.b)
	if rep.Ignored != 2 || len(rep.Rejected) != 0 {
		t.Fatalf("report %+v, want two ignored messages", rep)
	}
	if !bytes.Equal(before, stateBytes(t, f.b, f.c)) {
		t.Fatal("state changed")
	}
}

func TestWriteOfflineQueued(t *testing.T) {
	f := newFixture(t)
	if err := f.b.Assign(f.c, f.milk, "qty", []byte("5")); err != nil {
		t.Fatal(err)
	}
	if f.b.Pending() != 1 {
		t.Fatalf("pending %d", f.b.Pending())
	}
	// A does not see it until B syncs.
	syncT(t, f.a)
	if v := must[*record.State](t)(f.a.Snapshot(f.c)).Values(f.milk, "qty"); len(v) != 0 {
		t.Fatal("A saw an unpublished write")
	}
	if rep := syncT(t, f.b); rep.Published != 1 {
		t.Fatalf("published %d", rep.Published)
	}
	syncT(t, f.a)
	if v := must[*record.State](t)(f.a.Snapshot(f.c)).Values(f.milk, "qty"); len(v) != 1 || string(v[0].Value) != "5" {
		t.Fatalf("A reads %v", v)
	}
}

func TestDeleteWins(t *testing.T) {
	f := newFixture(t)
	if err := f.a.Delete(f.c, f.milk); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Assign(f.c, f.milk, "qty", []byte("9")); err != nil {
		t.Fatal(err)
	}
	syncT(t, f.a)
	syncT(t, f.b)
	syncT(t, f.a)
	for _, d := range []*Device{f.a, f.b} {
		if !must[*record.State](t)(d.Snapshot(f.c)).Deleted(f.milk) {
			t.Fatal("delete must win over a concurrent edit (§9.2)")
		}
	}
	if err := f.a.Assign(f.c, f.milk, "qty", []byte("1")); !errors.Is(err, record.ErrDeleted) {
		t.Fatalf("edit of a deleted record: %v", err)
	}
	if f.a.Pending() != 0 {
		t.Fatal("a failed write was queued")
	}
}

func TestWriteErrors(t *testing.T) {
	f := newFixture(t)
	if err := f.a.Assign(CollectionID{1}, f.milk, "x", nil); !errors.Is(err, ErrUnknownCollection) {
		t.Fatalf("unknown collection: %v", err)
	}
	if err := f.a.Assign(f.c, f.milk, "_secret", nil); !errors.Is(err, record.ErrReservedField) {
		t.Fatalf("reserved field: %v", err)
	}
	if err := f.a.Assign(f.c, f.milk, "big", make([]byte, hub.MaxMessage)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if f.a.Pending() != 0 {
		t.Fatal("a failed write was queued")
	}
}

// TestWritesDuringSync: a Device is safe for concurrent use; writes made
// while a Sync runs are kept and published by a later one.
func TestWritesDuringSync(t *testing.T) {
	f := newFixture(t)
	done := make(chan error, 1)
	go func() {
		var err error
		for i := range 40 {
			err = errors.Join(err, f.a.Assign(f.c, f.milk, "qty", []byte{byte('0' + i%10)}))
		}
		done <- err
	}()
	for range 5 {
		syncT(t, f.a)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	syncT(t, f.a)
	if f.a.Pending() != 0 {
		t.Fatalf("%d writes left unpublished", f.a.Pending())
	}
	syncT(t, f.b)
	if !bytes.Equal(stateBytes(t, f.a, f.c), stateBytes(t, f.b, f.c)) {
		t.Fatal("B differs from A")
	}
}
