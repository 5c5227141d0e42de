package jmaphub

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

func ptr(s string) *string { return &s }

// addEnvelope stores a good message on channel ch in the fake's Tandem mailbox.
func addEnvelope(m *mailModel, ch string, env []byte) string {
	return m.add(&fakeEmail{channel: ptr(" " + ch), value: strings.ReplaceAll(hub.EncodeBody(env), "\r\n", "\n")})
}

func TestSessionRelativeURLs(t *testing.T) {
	f := newFake(t)
	st := f.open(t)
	api, err := st.s.resolve(st.s.apiURL, nil)
	if err != nil || api.String() != f.srv.URL+"/api/" {
		t.Fatalf("apiUrl resolved to %v (%v), want %s/api/", api, err, f.srv.URL)
	}
	dl, err := st.s.resolve(st.s.downloadURL, map[string]string{"accountId": "A1", "blobId": "b/1 2", "name": "m", "type": "message/rfc822"})
	if err != nil || dl.String() != f.srv.URL+"/dl/A1/b%2F1%202/m?type=message%2Frfc822" {
		t.Fatalf("downloadUrl resolved to %v (%v)", dl, err)
	}
	if st.accountID() != "A1" || st.s.maxObjectsInSet != 3 || st.s.maxObjectsInGet != 5 {
		t.Fatalf("session: account %q, maxObjectsInSet %d, maxObjectsInGet %d", st.accountID(), st.s.maxObjectsInSet, st.s.maxObjectsInGet)
	}
}

// TestSessionAfterRedirect: the session URL redirects (as Cyrus's
// /.well-known/jmap does); relative URLs resolve against where the session
// resource was found.
func TestSessionAfterRedirect(t *testing.T) {
	f := newFake(t)
	withMail(f)
	f.session["apiUrl"] = "api/"
	st, err := Open(t.Context(), Config{SessionURL: f.srv.URL + "/.well-known/jmap", Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api, err := st.s.resolve(st.s.apiURL, nil)
	if err != nil || api.String() != f.srv.URL+"/jmap/api/" {
		t.Fatalf("apiUrl resolved to %v, %v; want %s/jmap/api/", api, err, f.srv.URL)
	}
	if err := st.EnsureFolder(t.Context()); err != nil {
		t.Fatalf("EnsureFolder through the resolved apiUrl: %v", err)
	}
}

func TestSessionBad(t *testing.T) {
	f := newFake(t)
	if _, err := Open(t.Context(), Config{SessionURL: f.url(), Username: "u", Password: "wrong"}); !errors.Is(err, hub.ErrProtocol) {
		var he *HTTPError
		if !errors.As(err, &he) || he.Status != 401 || !errors.Is(err, ErrHTTP) {
			t.Fatalf("wrong password: %v, want HTTPError 401", err)
		}
	}
	for name, mutate := range map[string]func(map[string]any){
		"no mail capability": func(s map[string]any) { delete(s["capabilities"].(map[string]any), capMail) },
		"no primary account": func(s map[string]any) { s["primaryAccounts"] = map[string]any{} },
		"no apiUrl":          func(s map[string]any) { s["apiUrl"] = "" },
		"bad template":       func(s map[string]any) { s["apiUrl"] = "/api/{oops" },
		"non-http apiUrl":    func(s map[string]any) { s["apiUrl"] = "ftp://x/api" },
		"capability not obj": func(s map[string]any) { s["capabilities"].(map[string]any)[capCore] = "x" },
	} {
		f := newFake(t)
		mutate(f.session)
		if _, err := Open(t.Context(), Config{SessionURL: f.url(), Username: "u", Password: "p"}); !errors.Is(err, hub.ErrProtocol) {
			t.Errorf("%s: %v, want hub.ErrProtocol", name, err)
		}
	}
}

func TestPickMailbox(t *testing.T) {
	top := func(id, name string) mailboxInfo { return mailboxInfo{ID: id, Name: name} }
	under := func(id, name, parent string) mailboxInfo {
		return mailboxInfo{ID: id, Name: name, ParentID: ptr(parent)}
	}
	for _, tc := range []struct {
		name string
		list []mailboxInfo
		want string
	}{
		{"exact top level", []mailboxInfo{top("a", "Tandem")}, "a"},
		{"substring matches are not Tandem", []mailboxInfo{top("a", "MyTandem"), top("b", "Tandem2"), top("c", "tandem"), top("d", "TANDEM")}, ""},
		{"top level beats under inbox", []mailboxInfo{under("u", "Tandem", "inbox"), top("t", "Tandem")}, "t"},
		{"under inbox", []mailboxInfo{under("u", "Tandem", "inbox")}, "u"},
		{"under another folder", []mailboxInfo{under("o", "Tandem", "other")}, ""},
		{"deeper than the inbox", []mailboxInfo{under("d", "Tandem", "child-of-inbox")}, ""},
		{"trailing space", []mailboxInfo{top("s", "Tandem ")}, ""},
	} {
		if got := pickMailbox(tc.list, []string{"inbox"}); got != tc.want {
			t.Errorf("%s: picked %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEnsureFolderCreate(t *testing.T) {
	f := newFake(t)
	exists := false
	f.on("Mailbox/query", func(a map[string]any) (string, any) {
		if filt, _ := a["filter"].(map[string]any); filt["role"] == "inbox" {
			return "Mailbox/query", map[string]any{"ids": []string{"mbI"}}
		}
		if exists {
			return "Mailbox/query", map[string]any{"ids": []string{"won"}}
		}
		return "Mailbox/query", map[string]any{"ids": []string{}}
	})
	f.on("Mailbox/get", func(a map[string]any) (string, any) {
		if !exists {
			return "Mailbox/get", map[string]any{"list": []any{}}
		}
		return "Mailbox/get", map[string]any{"list": []any{map[string]any{"id": "won", "name": "Tandem", "parentId": nil}}}
	})
	// Another client creates it first: the server refuses ours with the
	// type Cyrus uses for a duplicate name.
	var created map[string]any
	f.on("Mailbox/set", func(a map[string]any) (string, any) {
		created = a["create"].(map[string]any)["tandem"].(map[string]any)
		exists = true
		return "Mailbox/set", map[string]any{"notCreated": map[string]any{"tandem": map[string]any{"type": "invalidProperties"}}}
	})
	st := f.open(t)
	if err := st.EnsureFolder(t.Context()); err != nil {
		t.Fatalf("EnsureFolder after a lost race: %v", err)
	}
	if id, _ := st.ensureMailbox(t.Context()); id != "won" {
		t.Fatalf("mailbox %q, want the winner's", id)
	}
	if created["name"] != "Tandem" || created["parentId"] != nil {
		t.Fatalf("created %v, want Tandem at top level", created)
	}

	// Refused and still absent: the SetError comes back.
	f2 := newFake(t)
	f2.on("Mailbox/query", func(map[string]any) (string, any) { return "Mailbox/query", map[string]any{"ids": []string{}} })
	f2.on("Mailbox/get", func(map[string]any) (string, any) { return "Mailbox/get", map[string]any{"list": []any{}} })
	f2.on("Mailbox/set", func(map[string]any) (string, any) {
		return "Mailbox/set", map[string]any{"notCreated": map[string]any{"tandem": map[string]any{"type": "forbidden"}}}
	})
	var se *SetError
	if err := f2.open(t).EnsureFolder(t.Context()); !errors.As(err, &se) || se.Type != "forbidden" || !errors.Is(err, ErrSetFailed) {
		t.Fatalf("refused create: %v, want SetError forbidden", err)
	}
}

func TestAppendBatches(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	var creates []map[string]any
	set := m.set
	f.on("Email/set", func(a map[string]any) (string, any) {
		for _, v := range a["create"].(map[string]any) {
			creates = append(creates, v.(map[string]any))
		}
		return set(a)
	})
	st := f.open(t)
	msgs := make([]hub.Message, 7)
	for i := range msgs {
		msgs[i] = hub.Message{Channel: hubtest.Channel(i), Envelope: hubtest.Envelope(100 + i)}
	}
	ids, err := st.appendBatch(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.sets, []int{3, 3, 1}) {
		t.Fatalf("Email/set batches %v, want [3 3 1] (maxObjectsInSet 3)", m.sets)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 7 {
		t.Fatalf("ids %v", ids)
	}
	for _, c := range creates {
		kw, _ := c["keywords"].(map[string]any)
		mb, _ := c["mailboxIds"].(map[string]any)
		if kw["$seen"] != true || len(kw) != 1 || mb[fakeMailbox] != true || len(mb) != 1 ||
			c["header:Tandem-Version:asText"] != "1" || !regexp.MustCompile(`^[a-z2-7]{32}$`).MatchString(c["header:Tandem-Channel:asText"].(string)) {
			t.Fatalf("create %v lacks a §10.2 property", c)
		}
	}
	// The bodies landed as the §10.4 text and read back.
	bodies, err := st.Fetch(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bodies {
		if b.Err != nil || !bytes.Equal(b.Envelope, msgs[i].Envelope) || b.Channel != msgs[i].Channel {
			t.Fatalf("body %d: %+v", i, b)
		}
	}

	// Large messages split by maxSizeRequest too.
	f.mu.Lock()
	f.session["capabilities"].(map[string]any)[capCore].(map[string]any)["maxSizeRequest"] = 300000
	f.mu.Unlock()
	st2 := f.open(t)
	m.sets = nil
	big := []hub.Message{
		{Channel: hubtest.Channel(1), Envelope: hubtest.Envelope(120000)},
		{Channel: hubtest.Channel(1), Envelope: hubtest.Envelope(120000)},
		{Channel: hubtest.Channel(1), Envelope: hubtest.Envelope(120000)},
	}
	if _, err := st2.appendBatch(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.sets, []int{1, 1, 1}) {
		t.Fatalf("batches of 160 KB bodies under a 300 KB request limit: %v, want [1 1 1]", m.sets)
	}

	// One bad message fails the call before anything is sent.
	m.sets = nil
	bad := []hub.Message{msgs[0], {Channel: "NOT-A-TAG", Envelope: msgs[1].Envelope}}
	if _, err := st.appendBatch(t.Context(), bad); !errors.Is(err, hub.ErrBadChannel) || len(m.sets) != 0 {
		t.Fatalf("bad batch: %v, sets %v", err, m.sets)
	}
}

func TestAppendNotCreated(t *testing.T) {
	f := newFake(t)
	withMail(f)
	f.on("Email/set", func(map[string]any) (string, any) {
		return "Email/set", map[string]any{"notCreated": map[string]any{"m0": map[string]any{"type": "overQuota"}}}
	})
	_, err := f.open(t).Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(80))
	var se *SetError
	if !errors.As(err, &se) || se.Type != "overQuota" {
		t.Fatalf("Append refused by the server: %v, want SetError overQuota", err)
	}
}

// addedIDs returns the ids of c.Added, sorted.
func addedIDs(c hub.Changes) []string {
	var out []string
	for _, a := range c.Added {
		out = append(out, string(a.ID))
	}
	slices.Sort(out)
	return out
}

func removedIDs(c hub.Changes) []string {
	var out []string
	for _, id := range c.Removed {
		out = append(out, string(id))
	}
	slices.Sort(out)
	return out
}

func TestChangesPagedAndMoves(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	a := addEnvelope(m, hubtest.Channel(1), hubtest.Envelope(80))
	b := addEnvelope(m, hubtest.Channel(2), hubtest.Envelope(80))
	c0, err := st.Changes(t.Context(), nil)
	if err != nil || !slices.Equal(addedIDs(c0), []string{a, b}) {
		t.Fatalf("initial: %+v %v", c0, err)
	}
	m.pageSize = 2
	var added []string
	for i := range 5 {
		added = append(added, addEnvelope(m, hubtest.Channel(i), hubtest.Envelope(80)))
	}
	elsewhere := m.add(&fakeEmail{mailboxes: map[string]bool{"mbI": true}, channel: ptr(" " + hubtest.Channel(9))})
	noHeader := m.add(&fakeEmail{}) // in Tandem, no channel header: not a Tandem message
	m.move(a, "mbI")                // moved out: an update
	m.move(elsewhere, fakeMailbox)  // moved in: an update of an unknown id
	m.destroy(b)
	m.destroy(added[4]) // created and destroyed in the window: in neither list
	before := len(f.callLog())
	c1, err := st.Changes(t.Context(), c0.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, name := range f.callLog()[before:] {
		if name == "Email/changes" {
			pages++
		}
	}
	if pages < 5 {
		t.Fatalf("%d Email/changes calls for 12 changes at 2 per page", pages)
	}
	want := append(slices.Clone(added[:4]), elsewhere)
	slices.Sort(want)
	if got := addedIDs(c1); !slices.Equal(got, want) {
		t.Fatalf("added %v, want %v", got, want)
	}
	if got := removedIDs(c1); !slices.Equal(got, sortedCopy(a, b)) {
		t.Fatalf("removed %v, want [%s %s]", got, a, b)
	}
	_ = noHeader
	// Nothing new: nothing reported, and the resync from scratch agrees.
	c2, err := st.Changes(t.Context(), c1.Cursor)
	if err != nil || len(c2.Added)+len(c2.Removed) != 0 {
		t.Fatalf("no-op changes: %+v %v", c2, err)
	}
	full, err := st.Changes(t.Context(), nil)
	if err != nil || !slices.Equal(addedIDs(full), want) {
		t.Fatalf("full resync lists %v, want %v", addedIDs(full), want)
	}
}

func sortedCopy(s ...string) []string { slices.Sort(s); return s }

func TestChangesFullResyncOnErrors(t *testing.T) {
	for _, typ := range []string{"cannotCalculateChanges", "invalidArguments"} {
		t.Run(typ, func(t *testing.T) {
			f := newFake(t)
			m := withMail(f)
			f.mu.Lock()
			f.session["capabilities"].(map[string]any)[capCore].(map[string]any)["maxObjectsInGet"] = 4
			f.mu.Unlock()
			st := f.open(t)
			var keep []string
			for i := range 6 {
				keep = append(keep, addEnvelope(m, hubtest.Channel(i), hubtest.Envelope(80)))
			}
			c0, err := st.Changes(t.Context(), nil)
			if err != nil || len(c0.Added) != 6 {
				t.Fatalf("initial: %+v %v", c0, err)
			}
			m.destroy(keep[2])
			m.move(keep[3], "mbI")
			var fresh []string
			for i := range 7 {
				fresh = append(fresh, addEnvelope(m, hubtest.Channel(i), hubtest.Envelope(90)))
			}
			m.setChangesError(typ)
			before := len(f.callLog())
			c1, err := st.Changes(t.Context(), c0.Cursor)
			if err != nil {
				t.Fatalf("Changes after %s: %v", typ, err)
			}
			queries := 0
			for _, n := range f.callLog()[before:] {
				if n == "Email/query" {
					queries++
				}
			}
			if queries < 3 {
				t.Fatalf("%d Email/query pages for 11 messages at 4 per page", queries)
			}
			if got := addedIDs(c1); !slices.Equal(got, sortedCopy(fresh...)) {
				t.Fatalf("added %v, want %v", got, fresh)
			}
			if got := removedIDs(c1); !slices.Equal(got, sortedCopy(keep[2], keep[3])) {
				t.Fatalf("removed %v", got)
			}
			// The new cursor works incrementally once the server recovers.
			m.setChangesError("")
			last := addEnvelope(m, hubtest.Channel(3), hubtest.Envelope(70))
			c2, err := st.Changes(t.Context(), c1.Cursor)
			if err != nil || !slices.Equal(addedIDs(c2), []string{last}) || len(c2.Removed) != 0 {
				t.Fatalf("after resync: %+v %v", c2, err)
			}
		})
	}
}

func TestFetchEncodingProblemFallback(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	env := hubtest.Envelope(300)
	ch := hubtest.Channel(4)
	raw := hubtest.RawMessage(ch, env, hubtest.Encoding{Charset: "utf-16le", Transfer: "base64"})
	id := m.add(&fakeEmail{channel: ptr(" " + ch), value: "\ufffd\ufffd garbage", encProblem: true, blob: string(raw)})
	bodies, err := st.Fetch(t.Context(), []hub.ID{hub.ID(id)})
	if err != nil || bodies[0].Err != nil || !bytes.Equal(bodies[0].Envelope, env) || bodies[0].Channel != ch {
		t.Fatalf("fallback to the raw blob: %+v %v", bodies, err)
	}
	// Without the flag the (garbage) value is used, and rejected.
	m.emails[id].encProblem = false
	bodies, err = st.Fetch(t.Context(), []hub.ID{hub.ID(id)})
	if err != nil || !errors.Is(bodies[0].Err, hub.ErrNotEnvelope) {
		t.Fatalf("garbage value: %+v %v", bodies, err)
	}
}

func TestFetchOneReading(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	text := strings.ReplaceAll(hub.EncodeBody(hubtest.Envelope(90)), "\r\n", "\n")
	ch := ptr(" " + hubtest.Channel(1))
	cases := map[string]struct {
		e    *fakeEmail
		want error
	}{
		"good":              {&fakeEmail{channel: ch, value: text, ctype: " text/plain; charset=us-ascii"}, nil},
		"utf-16 declared":   {&fakeEmail{channel: ch, value: text, ctype: " text/plain; charset=\"UTF-16\""}, nil},
		"unknown charset":   {&fakeEmail{channel: ch, value: text, ctype: " text/plain; charset=x-no-such"}, hub.ErrNotEnvelope},
		"multipart":         {&fakeEmail{channel: ch, value: text, ctype: " multipart/mixed; boundary=x"}, hub.ErrNotEnvelope},
		"bad content-type":  {&fakeEmail{channel: ch, value: text, ctype: " text/plain; charset"}, hub.ErrNotEnvelope},
		"folded channel":    {&fakeEmail{channel: ptr("\r\n \t" + hubtest.Channel(1) + " "), value: text}, nil},
		"not base64":        {&fakeEmail{channel: ch, value: "hello!"}, hub.ErrNotEnvelope},
		"no channel header": {&fakeEmail{value: text}, hub.ErrNotEnvelope},
	}
	for name, tc := range cases {
		id := m.add(tc.e)
		bodies, err := st.Fetch(t.Context(), []hub.ID{hub.ID(id)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !errors.Is(bodies[0].Err, tc.want) || (tc.want == nil && bodies[0].Channel != hubtest.Channel(1)) {
			t.Errorf("%s: %+v, want err %v", name, bodies[0], tc.want)
		}
	}
	// Moved out of Tandem or destroyed: not found.
	out := m.add(&fakeEmail{mailboxes: map[string]bool{"mbI": true}, channel: ch, value: text})
	bodies, err := st.Fetch(t.Context(), []hub.ID{hub.ID(out), "nonexistent"})
	if err != nil || !errors.Is(bodies[0].Err, hub.ErrNotFound) || !errors.Is(bodies[1].Err, hub.ErrNotFound) {
		t.Fatalf("not in Tandem: %+v %v", bodies, err)
	}
}

// TestBadAnswers checks that answers the binding cannot use give clear
// errors, change no cursor, and that the same cursor works afterwards.
func TestBadAnswers(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	first := addEnvelope(m, hubtest.Channel(1), hubtest.Envelope(80))
	c0, err := st.Changes(t.Context(), nil)
	if err != nil || len(c0.Added) != 1 {
		t.Fatal(c0, err)
	}
	saved := bytes.Clone(c0.Cursor)
	second := addEnvelope(m, hubtest.Channel(2), hubtest.Envelope(80))
	m.destroy(first)

	answers := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"truncated JSON", 200, `{"methodResponses":[["Email/changes",{"newState":"9","created":["e`, hub.ErrProtocol},
		{"HTML page", 200, `<html><body>Service Unavailable</body></html>`, hub.ErrProtocol},
		{"empty body", 200, ``, hub.ErrProtocol},
		{"not a Response", 200, `{"hello":"world"}`, hub.ErrProtocol},
		{"methodResponses not a list", 200, `{"methodResponses":{"a":1}}`, hub.ErrProtocol},
		{"unexpected method", 200, `{"methodResponses":[["Email/get",{"list":[]},"0"]]}`, hub.ErrProtocol},
		{"wrong call id", 200, `{"methodResponses":[["Email/changes",{"newState":"9"},"7"]]}`, hub.ErrProtocol},
		{"invocation of 2", 200, `{"methodResponses":[["Email/changes",{}]]}`, hub.ErrProtocol},
		{"arguments not an object", 200, `{"methodResponses":[["Email/changes",[1,2],"0"]]}`, hub.ErrProtocol},
		{"error without type", 200, `{"methodResponses":[["error",{},"0"]]}`, hub.ErrProtocol},
		{"created not a list", 200, `{"methodResponses":[["Email/changes",{"newState":"9","created":"e1"},"0"]]}`, hub.ErrProtocol},
		{"no newState", 200, `{"methodResponses":[["Email/changes",{"created":[]},"0"]]}`, hub.ErrProtocol},
		{"endless hasMoreChanges", 200, `{"methodResponses":[["Email/changes",{"newState":"` + decodeState(t, saved) + `","hasMoreChanges":true},"0"]]}`, hub.ErrProtocol},
		{"serverFail", 200, `{"methodResponses":[["error",{"type":"serverFail"},"0"]]}`, ErrMethod},
		{"HTTP 500 problem", 500, `{"type":"urn:ietf:params:jmap:error:limit","detail":"too big"}`, ErrHTTP},
		{"HTTP 503 text", 503, `try later`, ErrHTTP},
	}
	for _, a := range answers {
		f.setRaw(func() (int, string) { return a.status, a.body })
		c, err := st.Changes(t.Context(), saved)
		if !errors.Is(err, a.want) || c.Cursor != nil {
			t.Errorf("%s: Changes = %+v, %v; want error %v and no cursor", a.name, c, err, a.want)
		}
		if err != nil && len(err.Error()) < 20 {
			t.Errorf("%s: unclear error %q", a.name, err)
		}
		if _, err := st.Fetch(t.Context(), []hub.ID{hub.ID(second)}); err == nil && !strings.HasPrefix(a.body, `{"methodResponses":[["Email/`) {
			t.Errorf("%s: Fetch succeeded on a bad answer", a.name)
		}
		if _, err := st.Append(t.Context(), hubtest.Channel(3), hubtest.Envelope(80)); err == nil {
			t.Errorf("%s: Append succeeded on a bad answer", a.name)
		}
		if err := st.Destroy(t.Context(), []hub.ID{hub.ID(second)}); err == nil {
			t.Errorf("%s: Destroy succeeded on a bad answer", a.name)
		}
	}
	f.setRaw(nil)
	if !bytes.Equal(saved, c0.Cursor) {
		t.Fatal("the caller's cursor bytes changed")
	}
	c1, err := st.Changes(t.Context(), saved)
	if err != nil || !slices.Equal(addedIDs(c1), []string{second}) || !slices.Equal(removedIDs(c1), []string{first}) {
		t.Fatalf("after the bad answers, the saved cursor gives %+v, %v", c1, err)
	}
}

func decodeState(t *testing.T, c hub.Cursor) string {
	cur, err := decodeCursor(c)
	if err != nil {
		t.Fatal(err)
	}
	return cur.State
}

func TestCursorBad(t *testing.T) {
	f := newFake(t)
	withMail(f)
	st := f.open(t)
	for _, c := range []string{``, `{`, `[]`, `{"v":2}`, `{"v":1,"known":[""]}`, `{"v":1,"known":"x"}`, "\xff\xfe"} {
		if _, err := st.Changes(t.Context(), hub.Cursor(c)); !errors.Is(err, hub.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}

func TestCloseEndsCalls(t *testing.T) {
	f := newFake(t)
	withMail(f)
	st := f.open(t)
	done := make(chan error, 1)
	go func() { done <- st.Watch(context.Background(), func() {}) }()
	time.Sleep(100 * time.Millisecond)
	st.Close()
	select {
	case err := <-done:
		if !errors.Is(err, hub.ErrClosed) {
			t.Fatalf("Watch after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not end on Close")
	}
	if _, err := st.Changes(t.Context(), nil); !errors.Is(err, hub.ErrClosed) {
		t.Fatalf("Changes after Close: %v", err)
	}
}

// TestFetchSizedBatches: a large fetch reads sizes first and keeps each
// Email/get under maxObjectsInGet ids and the byte budget.
func TestFetchSizedBatches(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	var sizes []int // ids per body Email/get
	get := m.get
	f.on("Email/get", func(a map[string]any) (string, any) {
		if a["fetchTextBodyValues"] == true {
			sizes = append(sizes, len(strs(a["ids"])))
		}
		return get(a)
	})
	st := f.open(t)
	var ids []hub.ID
	envs := map[hub.ID][]byte{}
	for i := range 70 {
		env := hubtest.Envelope(80 + i)
		id := hub.ID(addEnvelope(m, hubtest.Channel(i), env))
		if i >= 60 { // ten messages the server says are 6 MiB each
			m.emails[string(id)].size = 6 << 20
		}
		ids, envs[id] = append(ids, id), env
	}
	bodies, err := st.Fetch(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		if b.Err != nil || !bytes.Equal(b.Envelope, envs[b.ID]) {
			t.Fatalf("%s: %v", b.ID, b.Err)
		}
	}
	// 60 small ones in batches of 5 (maxObjectsInGet), then at most two
	// 6 MiB ones per 16 MiB batch.
	want := []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 2, 2, 2, 2, 2}
	if !slices.Equal(sizes, want) {
		t.Fatalf("Email/get batches %v, want %v", sizes, want)
	}
}

func TestMaxCallsInRequest(t *testing.T) {
	f := newFake(t)
	withMail(f)
	f.session["capabilities"].(map[string]any)[capCore].(map[string]any)["maxCallsInRequest"] = 2
	st := f.open(t)
	// The mailbox lookup needs three calls in one request.
	if err := st.EnsureFolder(t.Context()); !errors.Is(err, hub.ErrProtocol) || !strings.Contains(err.Error(), "allows 2 method calls") {
		t.Fatalf("EnsureFolder under maxCallsInRequest 2: %v", err)
	}
}

// TestResyncAnchorIgnored: a server that ignores the anchor and answers the
// same full page forever gets a clear error, not an endless loop.
func TestResyncAnchorIgnored(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	for i := range 5 { // a full page: maxObjectsInGet is 5
		addEnvelope(m, hubtest.Channel(i), hubtest.Envelope(80))
	}
	query := m.query
	f.on("Email/query", func(a map[string]any) (string, any) {
		delete(a, "anchor")
		return query(a)
	})
	if _, err := f.open(t).Changes(t.Context(), nil); !errors.Is(err, hub.ErrProtocol) {
		t.Fatalf("Changes against a server that ignores anchors: %v", err)
	}
}
