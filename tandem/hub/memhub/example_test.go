package memhub_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// Two devices on one in-memory hub: what one appends, the other finds
// among the changes and fetches.
func Example() {
	ctx := context.Background()
	srv := memhub.NewServer()
	phone, laptop := srv.Open(), srv.Open()
	defer phone.Close()
	defer laptop.Close()

	channel := "abcdefghijklmnopqrstuvwxyz234567" // a channel tag: 32 b32 characters
	envelope := append([]byte("TNDM\x01\x01"), bytes.Repeat([]byte{7}, hub.MinEnvelope)...)
	if err := phone.EnsureFolder(ctx); err != nil { // the one Tandem folder
		fmt.Println(err)
		return
	}
	if _, err := phone.Append(ctx, channel, envelope); err != nil {
		fmt.Println(err)
		return
	}
	changes, err := laptop.Changes(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	bodies, _ := laptop.Fetch(ctx, []hub.ID{changes.Added[0].ID})
	fmt.Println(len(changes.Added), bodies[0].Channel == channel, bytes.Equal(bodies[0].Envelope, envelope))
	// Output: 1 true true
}
