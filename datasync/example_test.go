package datasync_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/ferry-sync/ferry/datasync"
	"github.com/ferry-sync/ferry/datasync/engine"
)

// Two replicas of one space: Alice serves, Bob connects, and a document
// Alice writes reaches Bob's engine.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, _ := os.MkdirTemp("", "datasync-example")
	defer os.RemoveAll(dir)

	aliceKey, _ := datasync.GenerateKey()
	bobKey, _ := datasync.GenerateKey()
	aliceDocs, _ := engine.NewKV("alice")
	bobDocs, _ := engine.NewKV("bob")
	alice, err := datasync.Open(filepath.Join(dir, "alice.state"), aliceDocs, aliceKey, datasync.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	bob, _ := datasync.Open(filepath.Join(dir, "bob.state"), bobDocs, bobKey, datasync.Options{})
	defer alice.Close()
	defer bob.Close()

	// Alice writes before anyone is connected: the link's first offer
	// carries it.
	alice.Update(ctx, "notes", func(e engine.Engine) error {
		return e.(*engine.KV).Set("notes", "title", []byte("Groceries"))
	})

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	linkCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- alice.Serve(linkCtx, ln, func(p datasync.PublicKey) bool { return p == bob.Public() })
	}()
	connected := make(chan error, 1)
	go func() { connected <- bob.Connect(linkCtx, ln.Addr().String(), alice.Public()) }()

	for ctx.Err() == nil {
		if v, ok := bobDocs.Get("notes", "title"); ok {
			fmt.Println(string(v))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	fmt.Println(<-served, <-connected)
	// Output:
	// Groceries
	// <nil> <nil>
}
