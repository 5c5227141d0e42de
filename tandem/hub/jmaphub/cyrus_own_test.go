package jmaphub

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// counter is an http.RoundTripper that counts the requests a store makes:
// API requests by the first method they call, and blob downloads.
type counter struct {
	mu        sync.Mutex
	methods   map[string]int
	downloads int
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.methods == nil {
		c.methods = map[string]int{}
	}
	if strings.Contains(r.URL.Path, "/download/") {
		c.downloads++
	}
	c.mu.Unlock()
	if r.Body != nil && r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		for _, m := range []string{"Email/set", "Email/changes", "Email/query", "Email/get"} {
			if bytes.Contains(b, []byte(`"`+m+`"`)) {
				c.mu.Lock()
				c.methods[m]++
				c.mu.Unlock()
			}
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (c *counter) get() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.methods {
		m[k] = v
	}
	return m, c.downloads
}

func ownAccount(t *testing.T) (Config, admin) {
	cfg := cyrusConfig(t, userOwn)
	adm := admin{openCyrus(t, cfg)}
	adm.reset(t)
	return cfg, adm
}

// TestCyrusWatchFallsBackToPolling: Cyrus 3.6 answers 204 to EventSource,
// and Watch then notices another connection's append and destroy by polling.
func TestCyrusWatchFallsBackToPolling(t *testing.T) {
	cfg := cyrusConfig(t, userWatch)
	adm := admin{openCyrus(t, cfg)}
	adm.reset(t)
	a, b := openCyrus(t, cfg), openCyrus(t, cfg)
	if err := a.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b.s.eventSourceURL == "" {
		t.Fatal("Cyrus announces no eventSourceUrl")
	}
	if _, err := b.stream(t.Context(), func() {}); !errors.Is(err, errNoPush) {
		t.Fatalf("EventSource on Cyrus: %v, want the 204 that means no push", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls, done := watchCalls(t, b, ctx)
	waitCall(t, calls, done, "the start of polling")
	noCall(t, calls, 3*testPoll, "an idle account")
	id, err := a.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(100))
	if err != nil {
		t.Fatal(err)
	}
	waitCall(t, calls, done, "an append on another connection")
	if err := a.Destroy(t.Context(), []hub.ID{id}); err != nil {
		t.Fatal(err)
	}
	waitCall(t, calls, done, "a destroy on another connection")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch after cancel: %v", err)
	}
}

// TestCyrusMailboxLookup checks the §10.2 rules on a real server: substring
// matches and other cases are not Tandem, the one under the inbox is taken
// when there is none at top level, and a top-level one wins.
func TestCyrusMailboxLookup(t *testing.T) {
	cfg, adm := ownAccount(t)
	acct := adm.st.s.accountID
	inbox := adm.inbox(t)
	mk := func(name string, parent any) string {
		var set setResp
		adm.req(t, call{"Mailbox/set", map[string]any{"accountId": acct,
			"create": map[string]any{"x": map[string]any{"name": name, "parentId": parent}}}, &set})
		if set.Created["x"].ID == "" {
			t.Fatalf("creating %s: %+v", name, set.NotCreated)
		}
		return set.Created["x"].ID
	}
	t.Cleanup(func() { destroyMailboxes(t, adm, "MyTandem", "Tandem2") })
	mk("MyTandem", nil)
	mk("Tandem2", nil)
	underInbox := mk(hub.Folder, inbox)

	st := openCyrus(t, cfg)
	if err := st.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.ensureMailbox(t.Context()); got != underInbox {
		t.Fatalf("picked %s, want the Tandem under the inbox %s", got, underInbox)
	}
	id, err := st.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(90))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		List []emailMeta `json:"list"`
	}
	adm.req(t, call{"Email/get", map[string]any{"accountId": acct, "ids": []string{string(id)}, "properties": metaProperties}, &got})
	if len(got.List) != 1 || !got.List[0].MailboxIDs[underInbox] || len(got.List[0].MailboxIDs) != 1 {
		t.Fatalf("appended into %+v, want only %s", got.List, underInbox)
	}

	top := mk(hub.Folder, nil)
	st2 := openCyrus(t, cfg)
	if err := st2.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := st2.ensureMailbox(t.Context()); got != top {
		t.Fatalf("picked %s, want the top-level Tandem %s", got, top)
	}
}

func destroyMailboxes(t *testing.T, adm admin, names ...string) {
	for _, n := range names {
		var q queryResp
		adm.req(t, call{"Mailbox/query", map[string]any{"accountId": adm.st.s.accountID, "filter": map[string]any{"name": n}}, &q})
		for _, id := range q.IDs {
			adm.req(t, call{"Mailbox/set", map[string]any{"accountId": adm.st.s.accountID, "destroy": []string{id},
				"onDestroyRemoveEmails": true}, nil})
		}
	}
}

// TestCyrusResyncOnUnusableState: Cyrus answers invalidArguments to a state
// it cannot read; the binding resyncs in full and loses nothing.
func TestCyrusResyncOnUnusableState(t *testing.T) {
	cfg, _ := ownAccount(t)
	cnt := &counter{}
	cfg.HTTPClient = &http.Client{Transport: cnt}
	st := openCyrus(t, cfg)
	if err := st.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	gone, err := st.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(80))
	if err != nil {
		t.Fatal(err)
	}
	c0, err := st.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := st.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(80))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Destroy(t.Context(), []hub.ID{gone}); err != nil {
		t.Fatal(err)
	}
	cur, _ := decodeCursor(c0.Cursor)
	cur.State = "not-a-cyrus-state"
	before, _ := cnt.get()
	c1, err := st.Changes(t.Context(), cur.encode())
	if err != nil {
		t.Fatalf("Changes from an unusable state: %v", err)
	}
	after, _ := cnt.get()
	if after["Email/query"] == before["Email/query"] {
		t.Fatal("no Email/query: the full resync did not run")
	}
	if !slices.Equal(addedIDs(c1), []string{string(fresh)}) || !slices.Equal(removedIDs(c1), []string{string(gone)}) {
		t.Fatalf("resync: %+v", c1)
	}
}

// TestCyrusAppendBatch batches creates to maxObjectsInSet (lowered here to
// 3) and checks what Cyrus stored: $seen, the two headers, the body.
func TestCyrusAppendBatch(t *testing.T) {
	cfg, adm := ownAccount(t)
	cnt := &counter{}
	cfg.HTTPClient = &http.Client{Transport: cnt}
	st := openCyrus(t, cfg)
	st.s.maxObjectsInSet = 3
	msgs := make([]hub.Message, 8)
	for i := range msgs {
		msgs[i] = hub.Message{Channel: hubtest.Channel(i % 3), Envelope: hubtest.Envelope(200 + i)}
	}
	ids, err := st.appendBatch(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := cnt.get(); m["Email/set"] != 3 {
		t.Fatalf("%d Email/set requests for 8 creates at 3 per set, want 3", m["Email/set"])
	}
	var got struct {
		List []struct {
			ID       string          `json:"id"`
			Keywords map[string]bool `json:"keywords"`
			BlobID   string          `json:"blobId"`
		} `json:"list"`
	}
	strIDs := make([]string, len(ids))
	for i, id := range ids {
		strIDs[i] = string(id)
	}
	adm.req(t, call{"Email/get", map[string]any{"accountId": adm.st.s.accountID, "ids": strIDs,
		"properties": []string{"id", "keywords", "blobId"}}, &got})
	if len(got.List) != 8 {
		t.Fatalf("Email/get found %d of 8", len(got.List))
	}
	for i, e := range got.List {
		if !e.Keywords["$seen"] {
			t.Errorf("%s: keywords %v, want $seen", e.ID, e.Keywords)
		}
		raw, err := st.c.download(t.Context(), st.s, e.BlobID)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hub.ParseMessage(raw) // the IMAP reader reads the JMAP-made message
		if err != nil || m.Channel != msgs[i].Channel || !bytes.Equal(m.Envelope, msgs[i].Envelope) {
			t.Errorf("%s as stored: %v, channel %q", e.ID, err, m.Channel)
		}
	}
	bodies, err := st.Fetch(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bodies {
		if b.Err != nil || !bytes.Equal(b.Envelope, msgs[i].Envelope) {
			t.Errorf("body %d: %v", i, b.Err)
		}
	}
}

// TestCyrusEncodingProblem: Cyrus flags a body it cannot decode with
// isEncodingProblem; the binding then downloads the raw message and reads it
// as an IMAP reader would (here: still not an envelope, and ignored).
func TestCyrusEncodingProblem(t *testing.T) {
	cfg, adm := ownAccount(t)
	cnt := &counter{}
	cfg.HTTPClient = &http.Client{Transport: cnt}
	st := openCyrus(t, cfg)
	mb, err := st.ensureMailbox(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ch := hubtest.Channel(5)
	raw := "From: x <x@example.org>\r\nTandem-Version: 1\r\nTandem-Channel: " + ch +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" +
		strings.TrimSuffix(hub.EncodeBody(hubtest.Envelope(90)), "\r\n") + "\xff\r\n"
	bad := adm.inject(t, mb, []byte(raw))
	good := hubtest.Envelope(120)
	okID := adm.inject(t, mb, hubtest.RawMessage(ch, good, hubtest.Encoding{Charset: "utf-16", Transfer: "base64"}))
	bodies, err := st.Fetch(t.Context(), []hub.ID{bad, okID})
	if err != nil {
		t.Fatal(err)
	}
	if _, downloads := cnt.get(); downloads != 1 {
		t.Fatalf("%d raw downloads, want 1 (only the body flagged isEncodingProblem)", downloads)
	}
	if !errors.Is(bodies[0].Err, hub.ErrNotEnvelope) || bodies[0].Channel != ch {
		t.Fatalf("undecodable body: %+v", bodies[0])
	}
	if bodies[1].Err != nil || !bytes.Equal(bodies[1].Envelope, good) {
		t.Fatalf("UTF-16 body decoded by the server: %v", bodies[1].Err)
	}
}

// TestCyrusCursorAcrossRestart: a cursor saved by one store is good in a
// store opened later on a new connection, as after a process restart.
func TestCyrusCursorAcrossRestart(t *testing.T) {
	cfg, _ := ownAccount(t)
	st := openCyrus(t, cfg)
	if err := st.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	c0, err := st.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st2 := openCyrus(t, cfg)
	id, err := st2.Append(t.Context(), hubtest.Channel(7), hubtest.Envelope(64))
	if err != nil {
		t.Fatal(err)
	}
	c1, err := st2.Changes(t.Context(), c0.Cursor)
	if err != nil || !slices.Equal(addedIDs(c1), []string{string(id)}) {
		t.Fatalf("changes from the saved cursor: %+v %v", c1, err)
	}
}

// TestCyrusMailboxDestroyed: another client destroys the Tandem mailbox
// (and its messages). Changes reports the known messages removed and goes on
// in the Tandem mailbox that exists now; a store that cached the destroyed
// one still appends, and no second Tandem is made. (Cyrus may give a
// recreated mailbox its old id, so ids are not compared.)
func TestCyrusMailboxDestroyed(t *testing.T) {
	cfg, adm := ownAccount(t)
	st, other := openCyrus(t, cfg), openCyrus(t, cfg)
	id, err := st.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(80))
	if err != nil {
		t.Fatal(err)
	}
	if err := other.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	c0, err := st.Changes(t.Context(), nil)
	if err != nil || len(c0.Added) != 1 {
		t.Fatalf("%+v %v", c0, err)
	}
	adm.destroyTandem(t) // destroys every email and the Tandem mailbox
	c1, err := st.Changes(t.Context(), c0.Cursor)
	if err != nil || !slices.Equal(removedIDs(c1), []string{string(id)}) || len(c1.Added) != 0 {
		t.Fatalf("after the mailbox was destroyed: %+v %v", c1, err)
	}
	id2, err := other.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(80))
	if err != nil {
		t.Fatalf("Append with a destroyed mailbox cached: %v", err)
	}
	c2, err := st.Changes(t.Context(), c1.Cursor)
	if err != nil || !slices.Equal(addedIDs(c2), []string{string(id2)}) || len(c2.Removed) != 0 {
		t.Fatalf("the new append: %+v %v", c2, err)
	}
	var got struct {
		List []mailboxInfo `json:"list"`
	}
	adm.req(t, call{"Mailbox/get", map[string]any{"accountId": adm.st.s.accountID, "ids": nil,
		"properties": []string{"id", "name", "parentId"}}, &got})
	n := 0
	for _, m := range got.List {
		if m.Name == hub.Folder {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d mailboxes named Tandem: %+v", n, got.List)
	}
}
