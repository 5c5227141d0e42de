package client

import (
	"testing"
	"time"
)

// A held message is evicted after the holding limit (§9.4); it is
// remembered with its first sighting and not downloaded again on every
// sync (only once its collection gains a roster statement, bounds.go); its
// hub message stays.
func TestHeldEvictedAfterLimit(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	clock := func() time.Time { return now }
	c := must[*Device](t)(New(Config{Secret: f.us, Hub: f.srv.Open(), Logger: quiet(), Now: clock, HoldFor: time.Hour}))
	syncT(t, c)
	ch := f.collectionChannel()
	w := buildWrite(t, f.c, f.a.id, [32]byte{42}, f.milk) // under a statement nobody has seen
	sealInject(t, f, ch, &RecordPayload{Record: f.milk, Writes: signedWrites(w)})
	if rep := syncT(t, c); rep.Held != 1 {
		t.Fatalf("first sync: %+v", rep)
	}
	now = now.Add(2 * time.Hour)
	if rep := syncT(t, c); rep.Held != 0 || rep.Fetched != 0 {
		t.Fatalf("sync past the limit: %+v, want the message evicted and not fetched", rep)
	}
	rep := syncT(t, c)
	if rep.Held != 0 || rep.Fetched != 0 {
		t.Fatalf("next sync: %+v, want the evicted message remembered, not fetched again", rep)
	}
	if len(hubIDsOf(t, f)) == 0 {
		t.Fatal("the held message was destroyed on the hub")
	}
}

func hubIDsOf(t *testing.T, f *fixture) []string {
	ch, err := f.srv.Open().Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range ch.Added {
		out = append(out, string(a.ID))
	}
	return out
}
