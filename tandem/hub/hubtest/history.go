package hubtest

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// testRandomHistory runs a random sequence of appends (on two connections),
// destroys and moves, taking cursors along the way. For every saved cursor,
// applying Changes from it to the state known at that cursor must give the
// same final state, and the envelopes in that state must be exactly those
// the test expects in the folder.
func testRandomHistory(t *testing.T, h Harness) {
	a, b := open(t, h), open(t, h)
	r := rand.New(rand.NewPCG(7, uint64(len(t.Name()))))
	in := map[[32]byte]int{} // envelope hash → copies expected in the folder
	type snapshot struct {
		cursor hub.Cursor
		state  map[hub.ID]string
	}
	state := map[hub.ID]string{}
	var snaps []snapshot
	var cur hub.Cursor
	sync := func() {
		c := changesT(t, a, cur)
		applyT(t, state, c)
		cur = c.Cursor
		snaps = append(snaps, snapshot{cur, maps.Clone(state)})
	}
	hashOf := map[hub.ID][32]byte{}
	var moveBack func(*testing.T)
	var movedHash [32]byte
	steps := 24
	if testing.Short() {
		steps = 12
	}
	for step := range steps {
		switch op := r.IntN(10); {
		case op < 5 || len(state) == 0:
			env := Envelope(60 + r.IntN(200))
			st := a
			if r.IntN(2) == 1 {
				st = b
			}
			id := appendT(t, st, Channel(r.IntN(3)), env)
			in[hub.Hash(env)]++
			hashOf[id] = hub.Hash(env)
		case op < 7:
			id := slices.Sorted(maps.Keys(state))[r.IntN(len(state))]
			if err := b.Destroy(ctxT(t), []hub.ID{id}); err != nil {
				t.Fatalf("step %d: Destroy: %v", step, err)
			}
			in[hashOf[id]]--
		case moveBack == nil:
			id := slices.Sorted(maps.Keys(state))[r.IntN(len(state))]
			moveBack, movedHash = h.MoveOut(t, id), hashOf[id]
			in[movedHash]--
		default:
			moveBack(t)
			moveBack = nil
			in[movedHash]++
		}
		sync() // learn the ids (and hashes) of what is in the folder now
		learnHashes(t, a, state, hashOf)
	}
	final := map[hub.ID]string{}
	applyT(t, final, changesT(t, b, nil))
	if !maps.Equal(final, state) {
		t.Fatalf("state from the chain of deltas %v differs from Changes(nil) %v", state, final)
	}
	for i, s := range snaps {
		got := maps.Clone(s.state)
		applyT(t, got, changesT(t, b, s.cursor))
		if !maps.Equal(got, final) {
			t.Fatalf("snapshot %d + Changes = %v, want %v", i, got, final)
		}
	}
	ids := slices.Sorted(maps.Keys(final))
	bodies, err := b.Fetch(ctxT(t), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range bodies {
		if body.Err != nil {
			t.Fatalf("fetch %s: %v", body.ID, body.Err)
		}
		in[hub.Hash(body.Envelope)]--
	}
	for hsh, n := range in {
		if n != 0 {
			t.Fatalf("envelope %x: %d copies more expected than the folder holds", hsh[:4], n)
		}
	}
}

// applyT applies a delta, checking that it is consistent with state.
func applyT(t *testing.T, state map[hub.ID]string, c hub.Changes) {
	t.Helper()
	for _, id := range c.Removed {
		if _, ok := state[id]; !ok {
			t.Fatalf("Changes removes %s, which was never added", id)
		}
		delete(state, id)
	}
	for _, a := range c.Added {
		if _, ok := state[a.ID]; ok {
			t.Fatalf("Changes adds %s twice", a.ID)
		}
		state[a.ID] = a.Channel
	}
}

// learnHashes fetches the envelopes of ids in state not yet hashed (moved
// in, so with new ids).
func learnHashes(t *testing.T, st hub.Store, state map[hub.ID]string, hashOf map[hub.ID][32]byte) {
	var missing []hub.ID
	for id := range state {
		if _, ok := hashOf[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return
	}
	bodies, err := st.Fetch(ctxT(t), missing)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		if b.Err != nil {
			t.Fatalf("fetch %s: %v", b.ID, b.Err)
		}
		hashOf[b.ID] = hub.Hash(b.Envelope)
	}
}
