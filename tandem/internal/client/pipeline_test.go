package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// manyRecords has f.a write n records and sync them.
func manyRecords(t *testing.T, f *fixture, n int) {
	t.Helper()
	for i := range n {
		rec := must[[16]byte](t)(f.a.NewRecordID())
		if err := f.a.Assign(f.c, rec, "title", fmt.Appendf(nil, "item %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	syncT(t, f.a)
}

// TestPipelineRejectsOneForgeryAmongMany: a first sync read by the
// pipeline (small batches, more workers than cores) rejects the one message
// holding a forged signature among 300 genuine ones, as a whole, and merges
// every other message: the new device ends with exactly the state of the
// device that wrote them.
func TestPipelineRejectsOneForgeryAmongMany(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	f := newFixture(t)
	manyRecords(t, f, 150)
	ch := f.collectionChannel()
	w := must[*record.State](t)(f.a.Snapshot(f.c)).Writes(f.milk)[0]
	forged := SignedWrite{Body: w.Body(), Sig: w.Sig()}
	forged.Body.Value = []byte("Whisky")
	forged.Body.Op, forged.Body.Element, forged.Body.Field = suite.OpAssign, nil, "title"
	genuine := SignedWrite{Body: w.Body(), Sig: w.Sig()}
	pt := must[[]byte](t)(EncodeRecordPayload(&RecordPayload{Record: f.milk, Writes: []SignedWrite{genuine, forged}}))
	env := must[[]byte](t)(suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, rand.Reader))
	bad := must[hub.ID](t)(f.srv.Open().Append(context.Background(), ch.tag, env))
	manyRecords(t, f, 150)
	if rep := syncT(t, f.a); len(rep.Rejected) != 0 {
		t.Fatalf("writer rejected %v after its own sync", rep.Rejected)
	}

	d, err := New(Config{Secret: f.us, Hub: f.srv.Open(), Name: "New", Logger: quiet(), FetchBatch: 7})
	if err != nil {
		t.Fatal(err)
	}
	rep := syncT(t, d)
	if len(rep.Rejected) != 1 || rep.Rejected[0].ID != bad {
		t.Fatalf("rejected %v, want only message %s; %+v", rep.Rejected, bad, rep)
	}
	for _, want := range []error{ErrRejected, roster.ErrSignature, record.ErrSignature} {
		if !errors.Is(rep.Rejected[0], want) {
			t.Fatalf("rejected with %v, want %v", rep.Rejected[0], want)
		}
	}
	if !bytes.Equal(stateBytes(t, d, f.c), stateBytes(t, f.a, f.c)) {
		t.Fatal("the new device's state differs from the writer's: the forged message changed it, or a genuine one was lost")
	}
	d.mu.Lock()
	st := d.msgs[bad].state
	d.mu.Unlock()
	if st != MsgRejected {
		t.Fatalf("forged message in state %d, want rejected", st)
	}
}

// failingFetch fails every Fetch after the first ok ones.
type failingFetch struct {
	hub.Store
	mu sync.Mutex
	ok int
}

var errFetchDown = errors.New("hub down")

func (s *failingFetch) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok == 0 {
		return nil, errFetchDown
	}
	s.ok--
	return s.Store.Fetch(ctx, ids)
}

// deltaLog is a Journal that keeps the message states it was given.
type deltaLog struct {
	mu    sync.Mutex
	state map[hub.ID]MsgState
}

func (j *deltaLog) Commit(ds ...*Delta) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, d := range ds {
		for _, m := range d.Msgs {
			j.state[m.ID] = m.State
		}
	}
	return nil
}

// TestPipelineFetchFailureKeepsWhatWasMerged: when the hub fails in the
// middle of a pull, Sync returns the failure, and what the batches before it
// merged reaches the journal before Sync returns (the pull stages its
// commits); the next Sync reads the rest and ends with the writer's state.
func TestPipelineFetchFailureKeepsWhatWasMerged(t *testing.T) {
	f := newFixture(t)
	manyRecords(t, f, 60)
	j := &deltaLog{state: map[hub.ID]MsgState{}}
	d, err := New(Config{Secret: f.us, Name: "New", Logger: quiet(), FetchBatch: 5, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	// Home is read first (one pass), then the collection: 3 fetches of 5.
	s := &failingFetch{Store: f.srv.Open(), ok: 4}
	if _, err := d.SyncWith(t.Context(), s); !errors.Is(err, errFetchDown) {
		t.Fatalf("Sync through a failing hub: %v, want %v", err, errFetchDown)
	}
	d.mu.Lock()
	var merged []hub.ID
	for id, m := range d.msgs {
		if m.state == MsgDone {
			merged = append(merged, id)
		}
	}
	d.mu.Unlock()
	if len(merged) < 10 {
		t.Fatalf("%d messages merged before the failure, want at least 10", len(merged))
	}
	j.mu.Lock()
	for _, id := range merged {
		if j.state[id] != MsgDone {
			t.Errorf("message %s merged but not committed as done (journal: %d)", id, j.state[id])
		}
	}
	j.mu.Unlock()
	if rep, err := d.SyncWith(t.Context(), f.srv.Open()); err != nil || len(rep.Rejected) != 0 {
		t.Fatalf("second Sync: %v %v", err, rep)
	}
	if !bytes.Equal(stateBytes(t, d, f.c), stateBytes(t, f.a, f.c)) {
		t.Fatal("after the second Sync the state differs from the writer's")
	}
}
