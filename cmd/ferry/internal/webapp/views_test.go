package webapp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem"
)

// TestIndicator: the sync indicator says each state of §13.2/§13.3 in
// words, and a refused credential with its sentence.
func TestIndicator(t *testing.T) {
	now := time.Now()
	auth := &tandem.Error{Code: tandem.CodeAuth, Message: "Sync access was revoked or changed. Reconnect to keep syncing.", Err: errors.New("NO")}
	for _, c := range []struct {
		name   string
		st     tandem.Status
		runErr error
		hub    bool
		class  string
		says   string
	}{
		{"no account", tandem.Status{}, nil, false, "none", "Not connected"},
		{"refused", tandem.Status{Online: true, LastSync: now}, auth, true, "error", "Reconnect to keep syncing"},
		{"first sync", tandem.Status{Online: true, Received: 10, Receiving: 400}, nil, true, "behind", "10 of 400"},
		{"offline", tandem.Status{Offline: true, LastSync: now, Pending: 2}, nil, true, "offline", "Offline"},
		{"behind", tandem.Status{Online: true, LastSync: now, Pending: 3}, nil, true, "behind", "3 change(s)"},
		{"connecting", tandem.Status{}, nil, true, "behind", "Connecting"},
		{"synced", tandem.Status{Online: true, LastSync: now}, nil, true, "ok", "Synced"},
	} {
		got := indicator(c.st, c.runErr, c.hub)
		if got.Class != c.class || !strings.Contains(got.Text, c.says) {
			t.Errorf("%s: %+v, want class %s saying %q", c.name, got, c.class, c.says)
		}
	}
}

func TestRoleWords(t *testing.T) {
	if got := article(roleName(tandem.RoleWriter)); got != "an editor" {
		t.Errorf("writer: %q", got)
	}
	if got := article(roleName(tandem.RoleReader)); got != "a reader" {
		t.Errorf("reader: %q", got)
	}
}
