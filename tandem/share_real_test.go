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
	aimees := 0
	s := shareStory(t, func(name string) Options {
		switch name {
		case "Jesper": // Jesper's phone: JMAP
			return Options{Name: name, Hub: jm}
		case "Jesper's laptop": // paired: takes the hub in the QR code (JMAP)
			return Options{Name: name}
		case "Ben": // Ben's app brings its own IMAP binding
			return Options{Name: name, Store: func(ctx context.Context) (hub.Store, error) {
				return imaphub.Open(ctx, imaphub.Config{Addr: addr, User: "elena", Password: pass})
			}}
		}
		if aimees++; aimees > 1 { // Aimee's second device: IMAP
			return Options{Name: name, Hub: imap}
		}
		return Options{Name: name} // Aimee's first takes the hub in the invite: JMAP
	})
	if s.ai2.Hub().Kind() != "imap" || s.ai.Hub().Kind() != "jmap" || s.j2.Hub().Kind() != "jmap" {
		t.Fatalf("bindings: Aimee %s and %s, Jesper's laptop %s", s.ai.Hub(), s.ai2.Hub(), s.j2.Hub())
	}
	runSharingChecks(t, s)
}

var _ = realtest.Required

func TestRotationStoryDovecot(t *testing.T) {
	h := dovecotHub(t, "felix")
	s := shareStory(t, func(name string) Options { return Options{Name: name, Hub: h} })
	runRotationStory(t, s)
}
