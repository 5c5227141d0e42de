package relay_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// A relay mounted in the operator's own http.Server, next to its admin
// endpoints, and shut down with its WebSockets.
func ExampleServer_Handler() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "relay-example")
	defer os.RemoveAll(dir)
	srv, err := relay.New(ctx, relay.Config{DBPath: filepath.Join(dir, "relay.db"), QuotaBytes: 10 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle("/sync", srv.Handler(ctx))
	mux.Handle("/healthz", srv.AdminHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)

	// A device of an owner syncs through it.
	owner := client.OwnerFromSecret(client.Secret{42})
	st, _ := client.OpenStore(ctx, filepath.Join(dir, "device.db"))
	defer st.Close()
	st.Put(ctx, owner, client.DbChange{Table: "todo", ID: client.ID{1}, Values: []client.Column{{Name: "title", Value: "Buy milk"}}})
	rep, err := client.Sync(ctx, "ws://"+ln.Addr().String()+"/sync", owner, st, client.SyncOptions{})
	fmt.Println(rep.Sent, rep.Outcome, err)

	// http.Server.Shutdown does not close WebSockets (they are hijacked);
	// the relay's Shutdown does.
	hs.Shutdown(ctx)
	srv.Shutdown(ctx)
	// Output: 1 Converged <nil>
}
