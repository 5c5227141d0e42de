package jmaphub_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// Open a JMAP account as a Tandem hub store and watch its Tandem folder:
// each call of the callback means "run Changes". An app rarely does this
// itself: tandem.JMAPHub describes the account and the device opens it.
// (Not run by go test: it needs a real server; the tests run the same calls
// against Cyrus.)
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := jmaphub.Open(ctx, jmaphub.Config{
		SessionURL: "https://api.example.com/jmap/session",
		Username:   "me@example.com",
		Password:   "an API token",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.EnsureFolder(ctx); err != nil {
		log.Fatal(err)
	}
	err = s.Watch(ctx, func() {
		fmt.Println("the folder may have changed: run Changes")
		cancel()
	})
	fmt.Println(err) // context.Canceled once the callback ended the watch
}
