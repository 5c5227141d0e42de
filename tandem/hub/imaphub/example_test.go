package imaphub_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
)

// Open a mail account as a Tandem hub store and list what its Tandem
// folder holds. An app rarely does this itself: tandem.IMAPHub describes the
// account and the device opens it. (Not run by go test: it needs a real
// server; the tests run the same calls against Dovecot.)
func Example() {
	ctx := context.Background()
	s, err := imaphub.Open(ctx, imaphub.Config{
		Addr:     "imap.example.com:993",
		User:     "me@example.com",
		Password: "an app password",
		Security: imaphub.ImplicitTLS,
	})
	if err != nil {
		log.Fatal(err) // a refused login is hub.ErrAuth; an unreachable server, hub.ErrUnavailable
	}
	defer s.Close()
	if err := s.EnsureFolder(ctx); err != nil {
		log.Fatal(err)
	}
	changes, err := s.Changes(ctx, nil) // nil: from the start
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(changes.Added), "Tandem messages")
}
