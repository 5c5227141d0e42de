package imaphub

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// TestFetchUsesHeadersFromChanges: after Changes, Fetch asks for
// BODY[TEXT] alone and decodes with the header fields Changes read; a Store
// that has not run Changes asks for the header fields too; both give the
// same bodies and per-message errors.
func TestFetchUsesHeadersFromChanges(t *testing.T) {
	f := newFake(t)
	var envs [][]byte
	for i := range 3 {
		env := hubtest.Envelope(100 + i)
		envs = append(envs, env)
		f.add(built(t, hubtest.Channel(i), env))
	}
	f.add("Tandem-Version: 2\r\nTandem-Channel: " + hubtest.Channel(1) + "\r\n\r\n" + hub.EncodeBody(envs[0]))
	var mu sync.Mutex
	var fetches []string
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "UID FETCH") {
			mu.Lock()
			fetches = append(fetches, line)
			mu.Unlock()
		}
		return "", false, false
	})
	lastFetch := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fetches[len(fetches)-1]
	}

	s := f.open(t)
	c, err := s.Changes(ctx5(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Added) != 4 {
		t.Fatalf("%d added", len(c.Added))
	}
	if l := lastFetch(); !strings.Contains(l, "HEADER.FIELDS ("+hub.HeaderChannel+" ") || !strings.Contains(l, ":*") {
		t.Fatalf("changes sent %q", l)
	}
	cached, err := s.Fetch(ctx5(t), ids(c))
	if err != nil {
		t.Fatal(err)
	}
	if l := lastFetch(); strings.Contains(l, "HEADER.FIELDS") || !strings.Contains(l, "BODY.PEEK[TEXT]") {
		t.Fatalf("fetch after changes sent %q", l)
	}

	s2, err := Open(ctx5(t), f.config())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	fresh, err := s2.Fetch(ctx5(t), ids(c))
	if err != nil {
		t.Fatal(err)
	}
	if l := lastFetch(); !strings.Contains(l, "HEADER.FIELDS") {
		t.Fatalf("fetch without changes sent %q", l)
	}
	for i, b := range [][]hub.Body{cached, fresh} {
		for j, env := range envs {
			if b[j].Err != nil || !bytes.Equal(b[j].Envelope, env) || b[j].Channel != hubtest.Channel(j) {
				t.Errorf("run %d, message %d: %v %q", i, j, b[j].Err, b[j].Channel)
			}
		}
		if !errors.Is(b[3].Err, hub.ErrUnknownVersion) {
			t.Errorf("run %d, Tandem-Version 2: %v", i, b[3].Err)
		}
	}

	// Destroyed messages leave the cache; a later message is fetched
	// with its header fields.
	if err := s.Destroy(ctx5(t), ids(c)[:1]); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.headers.lookup(7, 1); ok {
		t.Fatal("destroyed UID 1 still cached")
	}
	bodies, err := s.Fetch(ctx5(t), ids(c)[:1])
	if err != nil || !errors.Is(bodies[0].Err, hub.ErrNotFound) {
		t.Fatalf("destroyed message: %v %v", err, bodies)
	}
}

func TestHeaderCacheBounds(t *testing.T) {
	var hc headerCache
	hc.reset(5)
	for i := range memoEntries + 10 {
		hc.add(uint32(i+1), []byte("Tandem-Channel: c"+strings.Repeat("x", i)+"\r\n"))
	}
	if len(hc.memo.infos) != memoEntries {
		t.Fatalf("%d distinct blocks kept", len(hc.memo.infos))
	}
	if _, ok := hc.lookup(5, memoEntries+5); ok {
		t.Fatal("a block past the memo's bound was cached")
	}
	if hi, ok := hc.lookup(5, 2); !ok || hi.channel != "cx" {
		t.Fatalf("lookup(2) = %+v, %v", hi, ok)
	}
	if _, ok := hc.lookup(6, 2); ok {
		t.Fatal("lookup under another UIDVALIDITY")
	}
	hc.reset(6)
	if _, ok := hc.lookup(6, 2); ok || len(hc.memo.infos) != 0 {
		t.Fatal("reset to a new UIDVALIDITY kept entries")
	}
	long := []byte("Tandem-Channel: " + strings.Repeat("y", memoBlockMax) + "\r\n")
	if hi := hc.add(9, long); hi.channel != strings.Repeat("y", memoBlockMax) {
		t.Fatal("long block misparsed")
	}
	if _, ok := hc.lookup(6, 9); ok {
		t.Fatal("a block over memoBlockMax was cached")
	}
}

// TestDovecotFetchWithAndWithoutChanges: against the real Dovecot (user
// heidi), Fetch after Changes (BODY[TEXT] alone, header fields from
// Changes) and Fetch on a Store that never ran Changes (header fields
// fetched) give the same bodies.
func TestDovecotFetchWithAndWithoutChanges(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_ADDR", "heidi")
	s := openT(t, cfg)
	defer s.Close()
	ctx := ctx5(t)
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := s.Changes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(ctx, ids(old)); err != nil {
		t.Fatal(err)
	}
	var envs [][]byte
	for i := range 5 {
		env := hubtest.Envelope(200 + i)
		envs = append(envs, env)
		if _, err := s.Append(ctx, hubtest.Channel(i%2), env); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Changes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Added) != len(envs) {
		t.Fatalf("%d added", len(c.Added))
	}
	for _, a := range c.Added {
		v, uid, _ := parseID(a.ID)
		if _, ok := s.headers.lookup(v, uid); !ok {
			t.Fatalf("%s: Changes kept no header fields", a.ID)
		}
	}
	cached, err := s.Fetch(ctx, ids(c))
	if err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, cfg)
	defer s2.Close()
	fresh, err := s2.Fetch(ctx, ids(c))
	if err != nil {
		t.Fatal(err)
	}
	for i, env := range envs {
		for run, b := range [][]hub.Body{cached, fresh} {
			if b[i].Err != nil || !bytes.Equal(b[i].Envelope, env) || b[i].Channel != hubtest.Channel(i%2) {
				t.Errorf("run %d, message %d: %v %q", run, i, b[i].Err, b[i].Channel)
			}
		}
	}

	// A message another connection appended after s selected the folder:
	// s keeps its selection (NOOP, not SELECT) and still sees it.
	env := hubtest.Envelope(300)
	id, err := s2.Append(ctx, hubtest.Channel(7), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.c.selValidity == 0 {
		t.Fatal("s has no folder selected after Fetch")
	}
	b, err := s.Fetch(ctx, []hub.ID{id})
	if err != nil || b[0].Err != nil || !bytes.Equal(b[0].Envelope, env) || b[0].Channel != hubtest.Channel(7) {
		t.Fatalf("fetch of a message appended elsewhere: %v %+v", err, b)
	}

	// The folder deleted behind s's back: no envelope comes back, and s
	// works again once the folder exists.
	a := newAdmin(t, cfg)
	a.reset()
	if b, err := s.Fetch(ctx, []hub.ID{id}); err == nil && (b[0].Err == nil || b[0].Envelope != nil) {
		t.Fatalf("fetch from a deleted folder: %+v", b)
	}
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Changes(ctx, nil); err != nil {
		t.Fatalf("changes after the folder came back: %v", err)
	}
}
