package tandemcli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// hangingJMAP answers the first request with a session document, then
// holds every later request open until the test ends; hung receives a
// value each time a request is held.
func hangingJMAP(t *testing.T) (srv *httptest.Server, hung <-chan struct{}) {
	var n atomic.Int32
	stop := make(chan struct{})
	held := make(chan struct{}, 100)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			held <- struct{}{}
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiUrl":"http://%s/api","capabilities":{"urn:ietf:params:jmap:core":{},"urn:ietf:params:jmap:mail":{}},"accounts":{},"primaryAccounts":{},"username":"x","state":"1"}`, r.Host)
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv, held
}

// TestInterrupt: Ctrl-C during a sync that hangs stops at once with one
// line, exit 1, and is not recorded as a failed sync.
func TestInterrupt(t *testing.T) {
	d := initialized(t)
	d.env = []string{"FERRY_PASSWORD=x"}
	srv, hung := hangingJMAP(t)
	for _, args := range [][]string{{"connect", "jmap", srv.URL, "--user", "x"}, {"sync"}} {
		p := d.start(args...)
		select { // the sync is waiting for the server
		case <-hung:
		case <-time.After(30 * time.Second):
			t.Fatalf("%v never reached the server", args)
		}
		start := time.Now()
		p.cmd.Process.Signal(os.Interrupt)
		// Read stderr to its end before Wait, which closes the pipe (read
		// after it, the last chunk can be lost).
		var stderr string
		for s := range p.errOut {
			stderr += s
		}
		err := p.cmd.Wait()
		if code := p.cmd.ProcessState.ExitCode(); code != 130 || err == nil {
			t.Errorf("%v after Ctrl-C: exit %d", args, code)
		}
		if el := time.Since(start); el > realtest.Scale(5*time.Second) {
			t.Errorf("%v took %s to stop", args, el)
		}
		if !strings.Contains(stderr, "ferry: stopped; what was already sent stays sent") {
			t.Errorf("%v: stderr %q", args, stderr)
		}
		humanLine(t, stderr)
	}
	var st struct{ Connection, Hub string }
	d.jsonOut(&st, "status")
	if st.Connection != "never" || !strings.Contains(st.Hub, srv.URL) {
		t.Errorf("status after interrupted syncs: %+v", st)
	}
}
