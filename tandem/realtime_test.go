package tandem

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// hubIDs lists every message in the hub's folder.
func hubIDs(t *testing.T, s hub.Store) []hub.ID {
	t.Helper()
	ch, err := s.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []hub.ID
	for _, a := range ch.Added {
		out = append(out, a.ID)
	}
	return out
}

func syncT(t *testing.T, d *Device) SyncReport {
	t.Helper()
	rep, err := d.Sync(t.Context())
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return rep
}

// A record edited 50 times, synced after each edit, leaves one message on
// the hub, not 50 (§10.7).
func TestEditedRecordLeavesOneMessage(t *testing.T) {
	srv := memhub.NewServer()
	d := openT(t, filepath.Join(t.TempDir(), "d"), Options{Store: memStore(srv)})
	defer d.Close()
	c, _ := d.NewCollection("L")
	id, _ := d.NewRecord(c, map[string][]byte{"title": []byte("x")})
	syncT(t, d)
	base := len(hubIDs(t, srv.Open())) // genesis, home membership, _meta, the record
	for i := 0; i < 50; i++ {
		d.SetString(c, id, "title", string(rune('a'+i%26)))
		d.AddElement(c, id, "tags", []byte{byte(i)})
		syncT(t, d)
	}
	if n := len(hubIDs(t, srv.Open())); n != base {
		t.Fatalf("hub holds %d messages after 50 edits, want %d", n, base)
	}
	// Batching: edits between two syncs are one message.
	for i := 0; i < 10; i++ {
		d.SetString(c, id, "title", "batched")
	}
	if rep := syncT(t, d); rep.Published != 1 {
		t.Fatalf("10 edits of one record published %d messages, want 1", rep.Published)
	}
}

// A vandal holding the hub credential destroys every message; the next
// sync of a member device publishes everything again, and a new device of
// the user then gets the full state (§12.2). A tombstone is not undone.
func TestHealingAfterVandal(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Store: memStore(srv)})
	defer a.Close()
	c, _ := a.NewCollection("House")
	keep, _ := a.NewRecord(c, map[string][]byte{"title": []byte("Paint")})
	gone, _ := a.NewRecord(c, map[string][]byte{"title": []byte("Old")})
	syncT(t, a)
	a.Delete(c, gone)
	syncT(t, a)

	vandal := srv.Open()
	if err := vandal.Destroy(t.Context(), hubIDs(t, vandal)); err != nil {
		t.Fatal(err)
	}
	rep := syncT(t, a)
	if rep.Healed == 0 {
		t.Fatal("nothing healed after the hub was emptied")
	}
	b, err := Restore(t.Context(), filepath.Join(t.TempDir(), "b"), a.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	syncT(t, b)
	if st, _ := b.CollectionState(c); st != StateFollowing {
		t.Fatalf("new device: collection %s", st)
	}
	r, err := b.Record(c, keep)
	if err != nil || r.Get("title") != "Paint" {
		t.Fatalf("healed record: %v %+v", err, r)
	}
	if r, err := b.Record(c, gone); err != nil || !r.Deleted {
		t.Fatalf("the deleted record came back: %v %+v", err, r)
	}
	if !bytesEqual(stateOf(t, a, c), stateOf(t, b, c)) {
		t.Fatal("states differ after healing")
	}
	// A second sync heals nothing more.
	if rep := syncT(t, a); rep.Healed != 0 || rep.Published != 0 {
		t.Fatalf("second sync after healing: %+v", rep)
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

var _ = context.Background

func memhubServer(t *testing.T) *memhub.Server { return memhub.NewServer() }

// Healing after a rotation (§12.2): a vandal destroys every message, the
// owner's device puts back the roster in each epoch's channel (the
// announcement included, or the new epoch would be a draft), the current
// inventory and the records; a device set up afterwards gets everything.
func TestHealingAfterRotation(t *testing.T) {
	srv := memhub.NewServer()
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	p, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	s.syncAll(1)
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	v := srv.Open()
	if err := v.Destroy(t.Context(), hubIDs(t, v)); err != nil {
		t.Fatal(err)
	}
	if rep := syncT(t, s.j1); rep.Healed == 0 {
		t.Fatal("nothing healed")
	}
	tab, err := Restore(t.Context(), filepath.Join(t.TempDir(), "tab"), s.j1.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	rep := syncT(t, tab)
	if rep.Held != 0 {
		t.Fatalf("the new device holds %d messages: the hub lacks something", rep.Held)
	}
	if r, err := tab.Record(s.c, p); err != nil || r.Get("title") != "Paint" {
		t.Fatalf("the new device: %v %+v", err, r)
	}
	if !bytesEqual(stateOf(t, tab, s.c), stateOf(t, s.j1, s.c)) {
		t.Fatal("states differ")
	}
}

// A sync reports its progress reading the hub (Status.Received of
// Receiving), so an app can draw a first sync's download.
func TestFirstSyncProgress(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Store: memStore(srv)})
	defer a.Close()
	c, _ := a.NewCollection("Many")
	for i := 0; i < 1500; i++ {
		a.NewRecord(c, map[string][]byte{"title": []byte{byte(i), byte(i >> 8)}})
	}
	syncT(t, a)
	b, err := Restore(t.Context(), filepath.Join(t.TempDir(), "b"), a.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	done, stop := make(chan struct{}), make(chan struct{})
	seen := 0
	go func() {
		defer close(done)
		for {
			if st := b.Status(); st.Receiving > 0 && st.Received <= st.Receiving {
				seen = max(seen, st.Received)
			}
			select {
			case <-time.After(200 * time.Microsecond):
			case <-stop:
				return
			}
		}
	}()
	syncT(t, b)
	close(stop)
	<-done
	if seen == 0 {
		t.Fatal("no progress seen while reading 1,500 messages")
	}
	if st := b.Status(); st.Receiving != 0 || st.Received != 0 {
		t.Fatalf("progress after the sync: %+v", st)
	}
}
