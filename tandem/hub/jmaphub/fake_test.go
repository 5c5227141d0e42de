package jmaphub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is a scripted JMAP server for unit tests of what a real server will
// not do on demand: bad answers, paging, method errors, push. Method
// handlers get the call's arguments and return the response name and
// arguments; raw, when set, replaces the whole API answer.
type fake struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	methods map[string]func(args map[string]any) (string, any)
	raw     func() (status int, body string) // replaces the API answer when set
	calls   []string                         // method names, in order
	session map[string]any
	blobs   map[string]string
	events  http.HandlerFunc // the eventsource endpoint
}

const fakeMailbox = "mbT"

func newFake(t *testing.T) *fake {
	f := &fake{t: t, methods: map[string]func(map[string]any) (string, any){}, blobs: map[string]string{}}
	f.session = map[string]any{
		"capabilities": map[string]any{
			capCore: map[string]any{"maxObjectsInSet": 3, "maxObjectsInGet": 5, "maxCallsInRequest": 16, "maxSizeRequest": 10 << 20},
			capMail: map[string]any{},
		},
		"accounts":        map[string]any{"A1": map[string]any{"name": "x"}},
		"primaryAccounts": map[string]any{capMail: "A1"},
		// Relative URLs, resolved against the session URL (§10.2).
		"apiUrl":         "../api/",
		"downloadUrl":    "../dl/{accountId}/{blobId}/{name}?type={type}",
		"uploadUrl":      "../up/{accountId}/",
		"eventSourceUrl": "../events?types={types}&closeafter={closeafter}&ping={ping}",
		"state":          "s0",
	}
	// The Tandem mailbox exists, at top level.
	f.on("Mailbox/query", func(a map[string]any) (string, any) {
		if filt, _ := a["filter"].(map[string]any); filt["role"] == "inbox" {
			return "Mailbox/query", map[string]any{"ids": []string{"mbI"}}
		}
		return "Mailbox/query", map[string]any{"ids": []string{fakeMailbox}}
	})
	f.on("Mailbox/get", func(map[string]any) (string, any) {
		return "Mailbox/get", map[string]any{"list": []map[string]any{{"id": fakeMailbox, "name": "Tandem", "parentId": nil}}}
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/jmap/session", f.serveSession)
	mux.HandleFunc("/.well-known/jmap", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/jmap/session", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/api/", f.serveAPI)
	mux.HandleFunc("/jmap/api/", f.serveAPI)
	mux.HandleFunc("/dl/", f.serveDownload)
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		h := f.events
		f.mu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h(w, r)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) url() string { return f.srv.URL + "/jmap/session" }

func (f *fake) on(method string, h func(args map[string]any) (string, any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.methods[method] = h
}

func (f *fake) setRaw(r func() (int, string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raw = r
}

func (f *fake) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fake) open(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.Context(), Config{SessionURL: f.url(), Username: "u", Password: "p", PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func (f *fake) serveSession(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "p" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	b, _ := json.Marshal(f.session)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (f *fake) serveDownload(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Path, "/") // "", "dl", account, blob, name
	f.mu.Lock()
	blob, ok := f.blobs[parts[3]]
	f.mu.Unlock()
	if len(parts) != 5 || parts[2] != "A1" || !ok {
		http.NotFound(w, r)
		return
	}
	io.WriteString(w, blob)
}

func (f *fake) serveAPI(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Using       []string
		MethodCalls []invocation
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	raw := f.raw
	for _, c := range req.MethodCalls {
		f.calls = append(f.calls, c.Name)
	}
	f.mu.Unlock()
	if raw != nil {
		status, body := raw()
		w.WriteHeader(status)
		io.WriteString(w, body)
		return
	}
	var out []any
	results := map[string]any{}
	for _, c := range req.MethodCalls {
		var args map[string]any
		json.Unmarshal(c.Args, &args)
		if ref, ok := args["#ids"].(map[string]any); ok { // result references, /ids only
			prev, _ := json.Marshal(results[ref["resultOf"].(string)])
			var p struct{ IDs []string }
			json.Unmarshal(prev, &p)
			args["ids"] = p.IDs
			delete(args, "#ids")
		}
		f.mu.Lock()
		h := f.methods[c.Name]
		f.mu.Unlock()
		if h == nil {
			out = append(out, []any{"error", map[string]any{"type": "unknownMethod"}, c.CallID})
			continue
		}
		name, resp := h(args)
		results[c.CallID] = resp
		out = append(out, []any{name, resp, c.CallID})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"methodResponses": out, "sessionState": "s0"})
}

// strs converts a decoded JSON array to strings.
func strs(v any) []string {
	if s, ok := v.([]string); ok {
		return s
	}
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = fmt.Sprint(x)
	}
	return out
}
