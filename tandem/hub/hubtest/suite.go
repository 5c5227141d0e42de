package hubtest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Run runs the conformance suite against the binding h connects to. The
// tests run one after another on the one account.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"EnsureFolder", testEnsureFolder},
		{"AppendChangesFetch", testAppendChangesFetch},
		{"BadInput", testBadInput},
		{"Destroy", testDestroy},
		{"DestroyedByAnotherClient", testDestroyedByAnother},
		{"MovedOutAndIn", testMoved},
		{"ConcurrentAppends", testConcurrentAppends},
		{"RestartFromCursor", testRestart},
		{"MessageLimit", testMessageLimit},
		{"OtherCharsets", testOtherCharsets},
		{"NotEnvelopes", testNotEnvelopes},
		{"Watch", testWatch},
		{"RandomHistory", testRandomHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.Reset(t)
			tc.fn(t, h)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// open opens a store, closes it at the end of the test and ensures the folder.
func open(t *testing.T, h Harness) hub.Store {
	t.Helper()
	st := h.Open(t)
	t.Cleanup(func() { st.Close() })
	if err := st.EnsureFolder(ctxT(t)); err != nil {
		t.Fatalf("EnsureFolder: %v", err)
	}
	return st
}

func appendT(t *testing.T, st hub.Store, ch string, env []byte) hub.ID {
	t.Helper()
	id, err := st.Append(ctxT(t), ch, env)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if id == "" {
		t.Fatal("Append returned an empty id")
	}
	return id
}

func changesT(t *testing.T, st hub.Store, since hub.Cursor) hub.Changes {
	t.Helper()
	c, err := st.Changes(ctxT(t), since)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if c.Cursor == nil {
		t.Fatal("Changes returned a nil cursor")
	}
	return c
}

// fetchOne fetches one id and fails the test on a whole-call error.
func fetchOne(t *testing.T, st hub.Store, id hub.ID) hub.Body {
	t.Helper()
	b, err := st.Fetch(ctxT(t), []hub.ID{id})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(b) != 1 || b[0].ID != id {
		t.Fatalf("Fetch(%s) = %+v, want one body for that id", id, b)
	}
	return b[0]
}

func addedMap(c hub.Changes) map[hub.ID]string {
	m := map[hub.ID]string{}
	for _, a := range c.Added {
		m[a.ID] = a.Channel
	}
	return m
}

func testEnsureFolder(t *testing.T, h Harness) {
	a, b := h.Open(t), h.Open(t)
	t.Cleanup(func() { a.Close(); b.Close() })
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs { // racing creators: ALREADYEXISTS is success
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() { errs[i] = st.EnsureFolder(ctxT(t)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("EnsureFolder #%d: %v", i, err)
		}
	}
	if err := a.EnsureFolder(ctxT(t)); err != nil {
		t.Fatalf("EnsureFolder again: %v", err)
	}
	c := changesT(t, a, nil)
	if len(c.Added)+len(c.Removed) != 0 {
		t.Fatalf("empty folder reports changes: %+v", c)
	}
}

func testAppendChangesFetch(t *testing.T, h Harness) {
	st := open(t, h)
	c0 := changesT(t, st, nil)
	envs := map[hub.ID][]byte{}
	chans := map[hub.ID]string{}
	for i := range 4 {
		env := Envelope(100 + i*333)
		id := appendT(t, st, Channel(i%2), env)
		if _, dup := envs[id]; dup {
			t.Fatalf("Append returned id %s twice", id)
		}
		envs[id], chans[id] = env, Channel(i%2)
	}
	c1 := changesT(t, st, c0.Cursor)
	got := addedMap(c1)
	if len(got) != 4 || len(c1.Added) != 4 || len(c1.Removed) != 0 {
		t.Fatalf("Changes after 4 appends: %+v", c1)
	}
	for id, ch := range chans {
		if got[id] != ch {
			t.Errorf("id %s: channel %q, want %q", id, got[id], ch)
		}
	}
	for _, a := range c1.Added { // a size, when reported, is the whole message's
		if a.Size != 0 && (a.Size < int64(hub.BodySize(len(envs[a.ID]))) || a.Size >= hub.MaxMessage) {
			t.Errorf("id %s: size %d for an envelope of %d bytes", a.ID, a.Size, len(envs[a.ID]))
		}
	}
	ids := make([]hub.ID, 0, 4)
	for _, a := range c1.Added {
		ids = append(ids, a.ID)
	}
	bodies, err := st.Fetch(ctxT(t), ids)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(bodies) != len(ids) {
		t.Fatalf("Fetch returned %d bodies for %d ids", len(bodies), len(ids))
	}
	for i, b := range bodies {
		if b.ID != ids[i] || b.Err != nil || !bytes.Equal(b.Envelope, envs[b.ID]) || b.Channel != chans[b.ID] {
			t.Errorf("body %d: id %s err %v channel %q, envelope equal %v", i, b.ID, b.Err, b.Channel, bytes.Equal(b.Envelope, envs[b.ID]))
		}
	}
	if c2 := changesT(t, st, c1.Cursor); len(c2.Added)+len(c2.Removed) != 0 {
		t.Fatalf("no-op Changes reports %+v", c2)
	}
	if c := changesT(t, st, nil); len(addedMap(c)) != 4 {
		t.Fatalf("Changes(nil) lists %d messages, want 4", len(c.Added))
	}
}

func testBadInput(t *testing.T, h Harness) {
	st := open(t, h)
	if _, err := st.Append(ctxT(t), "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", Envelope(64)); !errors.Is(err, hub.ErrBadChannel) {
		t.Errorf("Append with an upper-case tag: %v, want ErrBadChannel", err)
	}
	if _, err := st.Append(ctxT(t), Channel(0)+"\r\nX-Injected: 1", Envelope(64)); !errors.Is(err, hub.ErrBadChannel) {
		t.Errorf("Append with a header injection: %v, want ErrBadChannel", err)
	}
	if _, err := st.Append(ctxT(t), Channel(0), []byte("not an envelope at all, just text....................................")); !errors.Is(err, hub.ErrNotEnvelope) {
		t.Errorf("Append of a non-envelope: %v, want ErrNotEnvelope", err)
	}
	for _, cur := range []hub.Cursor{[]byte("garbage"), {}, bytes.Repeat([]byte{0xff}, 40)} {
		if _, err := st.Changes(ctxT(t), cur); !errors.Is(err, hub.ErrBadCursor) {
			t.Errorf("Changes(%q): %v, want ErrBadCursor", cur, err)
		}
	}
	if c := changesT(t, st, nil); len(c.Added) != 0 {
		t.Fatalf("rejected appends left messages: %+v", c)
	}
	// An id the store never gave out is simply not found.
	if b := fetchOne(t, st, "no-such-id"); !errors.Is(b.Err, hub.ErrNotFound) {
		t.Errorf("Fetch of an unknown id: %v, want ErrNotFound", b.Err)
	}
	if err := st.Destroy(ctxT(t), []hub.ID{"no-such-id"}); err != nil {
		t.Errorf("Destroy of an unknown id: %v", err)
	}
}

func testDestroy(t *testing.T, h Harness) {
	st := open(t, h)
	keep := appendT(t, st, Channel(0), Envelope(80))
	gone := appendT(t, st, Channel(0), Envelope(80))
	c1 := changesT(t, st, nil)
	if err := st.Destroy(ctxT(t), []hub.ID{gone}); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if err := st.Destroy(ctxT(t), []hub.ID{gone}); err != nil {
		t.Fatalf("Destroy of a destroyed message: %v", err)
	}
	c2 := changesT(t, st, c1.Cursor)
	if len(c2.Added) != 0 || len(c2.Removed) != 1 || c2.Removed[0] != gone {
		t.Fatalf("Changes after destroy: %+v, want removed [%s]", c2, gone)
	}
	if b := fetchOne(t, st, gone); !errors.Is(b.Err, hub.ErrNotFound) {
		t.Fatalf("Fetch of a destroyed message: err %v, want ErrNotFound", b.Err)
	}
	if b := fetchOne(t, st, keep); b.Err != nil {
		t.Fatalf("the other message was affected: %v", b.Err)
	}
	// An id appended and destroyed between two cursors is in neither list.
	tmp := appendT(t, st, Channel(1), Envelope(80))
	if err := st.Destroy(ctxT(t), []hub.ID{tmp}); err != nil {
		t.Fatal(err)
	}
	if c3 := changesT(t, st, c2.Cursor); len(c3.Added)+len(c3.Removed) != 0 {
		t.Fatalf("append+destroy between cursors reported: %+v", c3)
	}
}

func testDestroyedByAnother(t *testing.T, h Harness) {
	a, b := open(t, h), open(t, h)
	id := appendT(t, a, Channel(3), Envelope(90))
	ca := changesT(t, a, nil)
	if addedMap(ca)[id] != Channel(3) {
		t.Fatalf("A does not see its append: %+v", ca)
	}
	cb := changesT(t, b, nil)
	if addedMap(cb)[id] != Channel(3) {
		t.Fatalf("B does not see A's append: %+v", cb)
	}
	if err := b.Destroy(ctxT(t), []hub.ID{id}); err != nil {
		t.Fatalf("B destroys: %v", err)
	}
	c := changesT(t, a, ca.Cursor)
	if len(c.Removed) != 1 || c.Removed[0] != id || len(c.Added) != 0 {
		t.Fatalf("A after B destroyed %s: %+v", id, c)
	}
}

func testMoved(t *testing.T, h Harness) {
	st := open(t, h)
	env := Envelope(120)
	id := appendT(t, st, Channel(4), env)
	c1 := changesT(t, st, nil)
	moveBack := h.MoveOut(t, id)
	c2 := changesT(t, st, c1.Cursor)
	if len(c2.Removed) != 1 || c2.Removed[0] != id || len(c2.Added) != 0 {
		t.Fatalf("moved out: %+v, want removed [%s]", c2, id)
	}
	moveBack(t)
	c3 := changesT(t, st, c2.Cursor)
	if len(c3.Added) != 1 || c3.Added[0].Channel != Channel(4) || len(c3.Removed) != 0 {
		t.Fatalf("moved back in: %+v, want one added on %s", c3, Channel(4))
	}
	if b := fetchOne(t, st, c3.Added[0].ID); b.Err != nil || !bytes.Equal(b.Envelope, env) {
		t.Fatalf("fetch of the moved-in message: %v", b.Err)
	}
}

func testConcurrentAppends(t *testing.T, h Harness) {
	a, b := open(t, h), open(t, h)
	const n = 10
	want := map[[32]byte]bool{}
	envs := make([][]byte, 2*n)
	for i := range envs {
		envs[i] = Envelope(60 + i)
		want[hub.Hash(envs[i])] = true
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for w, st := range []hub.Store{a, b} {
		wg.Go(func() {
			for i := range n {
				if _, err := st.Append(ctxT(t), Channel(w), envs[w*n+i]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	c := changesT(t, a, nil)
	if len(addedMap(c)) != 2*n {
		t.Fatalf("%d distinct ids after %d appends", len(addedMap(c)), 2*n)
	}
	ids := make([]hub.ID, len(c.Added))
	for i, x := range c.Added {
		ids[i] = x.ID
	}
	bodies, err := b.Fetch(ctxT(t), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, bd := range bodies {
		if bd.Err != nil || !want[hub.Hash(bd.Envelope)] {
			t.Fatalf("body %s: %v", bd.ID, bd.Err)
		}
		delete(want, hub.Hash(bd.Envelope))
	}
	if len(want) != 0 {
		t.Fatalf("%d envelopes missing", len(want))
	}
}

func testRestart(t *testing.T, h Harness) {
	first := open(t, h)
	old := appendT(t, first, Channel(5), Envelope(70))
	saved := append(hub.Cursor(nil), changesT(t, first, nil).Cursor...)
	first.Close()

	other := open(t, h)
	fresh := appendT(t, other, Channel(6), Envelope(70))
	if err := other.Destroy(ctxT(t), []hub.ID{old}); err != nil {
		t.Fatal(err)
	}
	again := open(t, h) // a new process with the saved cursor
	for range 2 {       // the cursor is not consumed by use
		c := changesT(t, again, saved)
		if len(c.Added) != 1 || c.Added[0].ID != fresh || c.Added[0].Channel != Channel(6) {
			t.Fatalf("added since the saved cursor: %+v, want [%s]", c.Added, fresh)
		}
		if len(c.Removed) != 1 || c.Removed[0] != old {
			t.Fatalf("removed since the saved cursor: %v, want [%s]", c.Removed, old)
		}
	}
}

// maxEnvelope is the largest envelope whose §10.4 message stays under 1 MiB
// by a margin for the header.
func maxEnvelope() int {
	n := hub.MaxMessage * 3 / 4
	for 1024+hub.BodySize(n) >= hub.MaxMessage {
		n -= 1024
	}
	return n
}

func testMessageLimit(t *testing.T, h Harness) {
	st := open(t, h)
	if _, err := st.Append(ctxT(t), Channel(7), Envelope(hub.MaxMessage*3/4+1)); !errors.Is(err, hub.ErrTooLarge) {
		t.Fatalf("Append of a message over 1 MiB: %v, want ErrTooLarge", err)
	}
	env := Envelope(maxEnvelope())
	id := appendT(t, st, Channel(7), env)
	if b := fetchOne(t, st, id); b.Err != nil || !bytes.Equal(b.Envelope, env) {
		t.Fatalf("largest message: err %v, equal %v", b.Err, bytes.Equal(b.Envelope, env))
	}
	if c := changesT(t, st, nil); len(c.Added) != 1 {
		t.Fatalf("%d messages after one good and one refused append", len(c.Added))
	}
}

func testOtherCharsets(t *testing.T, h Harness) {
	st := open(t, h)
	c0 := changesT(t, st, nil)
	want := map[string][]byte{} // channel → envelope
	for i, enc := range encodings {
		ch, env := Channel(10+i), Envelope(150+i*40)
		want[ch] = env
		h.Inject(t, RawMessage(ch, env, enc))
	}
	c := changesT(t, st, c0.Cursor)
	if len(c.Added) != len(encodings) {
		t.Fatalf("%d added for %d injected messages: %+v", len(c.Added), len(encodings), c.Added)
	}
	for _, a := range c.Added {
		env, ok := want[a.Channel]
		if !ok {
			t.Errorf("unexpected channel %q", a.Channel)
			continue
		}
		if b := fetchOne(t, st, a.ID); b.Err != nil || !bytes.Equal(b.Envelope, env) {
			t.Errorf("channel %s (%s): err %v", a.Channel, encodingOf(a.Channel, want), b.Err)
		}
	}
}

func encodingOf(ch string, _ map[string][]byte) string {
	for i, e := range encodings {
		if Channel(10+i) == ch {
			return e.Name
		}
	}
	return "?"
}

func testNotEnvelopes(t *testing.T, h Harness) {
	st := open(t, h)
	c0 := changesT(t, st, nil)
	cases := NotEnvelopes()
	for _, nc := range cases {
		h.Inject(t, nc.Raw)
	}
	good := Envelope(77)
	goodID := appendT(t, st, Channel(20), good)
	c := changesT(t, st, c0.Cursor)
	byChan := map[string]hub.ID{}
	for _, a := range c.Added {
		byChan[a.Channel] = a.ID
	}
	for _, nc := range cases {
		id, listed := byChan[nc.Channel]
		if nc.Channel == "" {
			continue
		}
		if !listed {
			t.Errorf("%s: not listed by Changes (channel %q); %+v", nc.Name, nc.Channel, c.Added)
			continue
		}
		if b := fetchOne(t, st, id); !errors.Is(b.Err, nc.Want) {
			t.Errorf("%s: Fetch err %v, want %v", nc.Name, b.Err, nc.Want)
		}
	}
	if want := countListed(cases) + 1; len(c.Added) != want {
		t.Errorf("Changes lists %d messages, want %d (a message without channel header is not listed)", len(c.Added), want)
	}
	if b := fetchOne(t, st, goodID); b.Err != nil || !bytes.Equal(b.Envelope, good) {
		t.Fatalf("a good message beside the bad ones: %v", b.Err)
	}
}

func countListed(cases []NotEnvelope) int {
	n := 0
	for _, c := range cases {
		if c.Channel != "" {
			n++
		}
	}
	return n
}

func testWatch(t *testing.T, h Harness) {
	a, b := open(t, h), open(t, h)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	calls := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() { done <- b.Watch(ctx, func() { calls <- struct{}{} }) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-calls:
		case err := <-done:
			t.Fatalf("Watch ended while waiting for %s: %v", what, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("no onChange for %s within 30s", what)
		}
	}
	wait("the first call when listening")
	id := appendT(t, a, Channel(21), Envelope(64))
	wait("an append on another connection")
	drain(calls)
	if err := a.Destroy(ctxT(t), []hub.ID{id}); err != nil {
		t.Fatal(err)
	}
	wait("a destroy on another connection")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch after cancel returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not return after its context ended")
	}

	// Close ends a Watch in progress.
	c := open(t, h)
	listening := make(chan struct{}, 64)
	ended := make(chan error, 1)
	go func() { ended <- c.Watch(ctxT(t), func() { listening <- struct{}{} }) }()
	select {
	case <-listening:
	case err := <-ended:
		t.Fatalf("Watch ended before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not start listening")
	}
	c.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("Watch returned nil after Close")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not return after Close")
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}
