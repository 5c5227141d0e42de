package jmaphub

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
)

// Real-server tests run against the Cyrus that scripts/setup.d/20-cyrus.sh
// starts. Each test of this package uses its own account, so that they
// never see each other's messages:
const (
	userConformance = 2 // carol: the hubtest suite
	userOwn         = 0 // alice: this package's own Cyrus tests
	userWatch       = 1 // bob: the polling fallback
)

// testPoll is the polling interval used against Cyrus (no push there).
const testPoll = 200 * time.Millisecond

// cyrusConfig returns the config of test account i, or skips (fails under
// FERRY_REQUIRE_REAL=1) when no Cyrus is configured or reachable.
func cyrusConfig(t *testing.T, i int) Config {
	t.Helper()
	url := realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	users := strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",")
	if url == "" || i >= len(users) || !strings.Contains(users[i], ":") {
		noServer(t, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS not set (run scripts/setup.d/20-cyrus.sh and source .cache/env.d/cyrus.env)")
	}
	user, pass, _ := strings.Cut(users[i], ":")
	cfg := Config{SessionURL: url, Username: user, Password: pass, PollInterval: testPoll}
	ctx, cancel := context.WithTimeout(t.Context(), realtest.Scale(10*time.Second))
	defer cancel()
	st, err := Open(ctx, cfg)
	if err != nil {
		noServer(t, "Cyrus JMAP at "+url+" not reachable: "+err.Error())
	}
	st.Close()
	return cfg
}

func noServer(t *testing.T, why string) {
	t.Helper()
	realtest.Unavailable(t, why)
}

func openCyrus(t *testing.T, cfg Config) *Store {
	t.Helper()
	st, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// admin does, through a store's own JMAP connection, what the hubtest
// harness needs beyond hub.Store.
type admin struct{ st *Store }

func (a admin) req(t *testing.T, calls ...call) {
	t.Helper()
	// Not t.Context(): reset also runs in cleanups, after it is done.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.st.request(ctx, calls...); err != nil {
		t.Fatalf("admin %s: %v", calls[0].Name, err)
	}
}

// reset destroys every email of the account and, best effort, every
// mailbox named Tandem, so that the next store creates the Tandem mailbox
// afresh. Cyrus's delayed delete cannot destroy two mailboxes of one name
// within a second; the suite only needs the folder empty, so reset does
// not wait for that. Tests that need the mailbox gone use destroyTandem.
func (a admin) reset(t *testing.T) {
	t.Helper()
	a.clear(t, false)
}

// destroyTandem is reset, waiting out Cyrus's delayed delete so that every
// mailbox named Tandem is really gone.
func (a admin) destroyTandem(t *testing.T) {
	t.Helper()
	a.clear(t, true)
}

func (a admin) clear(t *testing.T, strict bool) {
	t.Helper()
	acct := a.st.s.accountID
	for {
		var q queryResp
		a.req(t, call{"Email/query", map[string]any{"accountId": acct, "limit": 1000}, &q})
		if len(q.IDs) == 0 {
			break
		}
		var set setResp
		a.req(t, call{"Email/set", map[string]any{"accountId": acct, "destroy": q.IDs}, &set})
		if len(set.NotDestroyed) > 0 {
			t.Fatalf("reset: not destroyed: %v", set.NotDestroyed)
		}
	}
	var q queryResp
	a.req(t, call{"Mailbox/query", map[string]any{"accountId": acct, "filter": map[string]any{"name": hub.Folder}}, &q})
	// Children before parents: destroy one at a time, deepest last found.
	for i := len(q.IDs) - 1; i >= 0; i-- {
		for try := 0; ; try++ {
			var set setResp
			a.req(t, call{"Mailbox/set", map[string]any{"accountId": acct, "destroy": []string{q.IDs[i]},
				"onDestroyRemoveEmails": true}, &set})
			if len(set.NotDestroyed) == 0 || !strict {
				break
			}
			if try == 3 {
				t.Fatalf("reset: mailbox %s not destroyed: %+v", q.IDs[i], set.NotDestroyed)
			}
			time.Sleep(time.Second) // the deleted name is taken for this second
		}
	}
}

// inbox returns the account's inbox id.
func (a admin) inbox(t *testing.T) string {
	t.Helper()
	var q queryResp
	a.req(t, call{"Mailbox/query", map[string]any{"accountId": a.st.s.accountID, "filter": map[string]any{"role": "inbox"}}, &q})
	if len(q.IDs) != 1 {
		t.Fatalf("inbox query: %v", q.IDs)
	}
	return q.IDs[0]
}

// move sets an email's only mailbox.
func (a admin) move(t *testing.T, id hub.ID, mailbox string) {
	t.Helper()
	var set setResp
	a.req(t, call{"Email/set", map[string]any{"accountId": a.st.s.accountID,
		"update": map[string]any{string(id): map[string]any{"mailboxIds": map[string]bool{mailbox: true}}}}, &set})
}

// inject uploads raw (RFC 8620 §6.1) and imports it into mailbox
// (RFC 8621 §4.8), as another client or a re-encoding server might store it.
func (a admin) inject(t *testing.T, mailbox string, raw []byte) hub.ID {
	t.Helper()
	u, err := a.st.s.resolve(a.st.s.uploadURL, map[string]string{"accountId": a.st.s.accountID})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u.String(), bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "message/rfc822")
	resp, err := a.st.c.do(req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	var up struct {
		BlobID string `json:"blobId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&up); err != nil || up.BlobID == "" {
		t.Fatalf("upload answer: %v %+v", err, up)
	}
	var imp struct {
		Created    map[string]createdInfo `json:"created"`
		NotCreated map[string]setErr      `json:"notCreated"`
	}
	a.req(t, call{"Email/import", map[string]any{"accountId": a.st.s.accountID, "emails": map[string]any{
		"e": map[string]any{"blobId": up.BlobID, "mailboxIds": map[string]bool{mailbox: true},
			"keywords": map[string]bool{"$seen": true}},
	}}, &imp})
	if imp.Created["e"].ID == "" {
		t.Fatalf("import: %+v", imp.NotCreated)
	}
	return hub.ID(imp.Created["e"].ID)
}
