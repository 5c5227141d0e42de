package tandem

import (
	"context"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
)

// The sharing story on one Dovecot account: five... four devices of three
// people, all over IMAP.
func TestSharingStoryDovecot(t *testing.T) {
	h := dovecotHub(t, "felix")
	s := shareStory(t, func(name string) Options { return Options{Name: name, Hub: h} })
	runSharingChecks(t, s)
}

// The same story on one Cyrus account, some devices on JMAP and others on
// IMAP (§4: one hub, different bindings).
func TestSharingStoryCyrusMixed(t *testing.T) {
	jm, _, addr, pass := cyrusJMAP(t, "elena")
	host, port, _ := strings.Cut(addr, ":")
	var p int
	for _, c := range port {
		p = p*10 + int(c-'0')
	}
	imap := IMAPHub(host, p, "elena", pass)
	n := 0
	s := shareStory(t, func(name string) Options {
		n++
		switch {
		case name == "Jesper" && n == 1: // Jesper's first device: JMAP
			return Options{Name: name, Hub: jm}
		case name == "Jesper": // his second: IMAP
			return Options{Name: name, Hub: imap}
		case name == "Ben": // Ben's app brings its own IMAP binding
			return Options{Name: name, Store: func(ctx context.Context) (hub.Store, error) {
				return imaphub.Open(ctx, imaphub.Config{Addr: addr, User: "elena", Password: pass})
			}}
		}
		return Options{Name: name} // Aimee takes the hub in the invite: JMAP
	})
	if s.j2.Hub().Kind() != "imap" || s.ai.Hub().Kind() != "jmap" {
		t.Fatalf("bindings: j2 %s, Aimee %s", s.j2.Hub(), s.ai.Hub())
	}
	runSharingChecks(t, s)
}

var _ = realtest.Required

func TestRotationStoryDovecot(t *testing.T) {
	h := dovecotHub(t, "felix")
	s := shareStory(t, func(name string) Options { return Options{Name: name, Hub: h} })
	runRotationStory(t, s)
}
