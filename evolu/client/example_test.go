package client_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// Two devices of one owner sync a row through a relay.
func ExampleSync() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "client-example")
	defer os.RemoveAll(dir)
	srv, _ := relay.New(ctx, relay.Config{DBPath: filepath.Join(dir, "relay.db")})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	url := "ws://" + ln.Addr().String()

	// The owner's secret, in Evolu's mnemonic form as a user would type it.
	secret, _ := client.ParseSecret(client.Secret{7}.Mnemonic())
	owner := client.OwnerFromSecret(secret)
	phone, _ := client.OpenStore(ctx, filepath.Join(dir, "phone.db"))
	laptop, _ := client.OpenStore(ctx, filepath.Join(dir, "laptop.db"))
	defer phone.Close()
	defer laptop.Close()

	phone.Put(ctx, owner, client.DbChange{Table: "todo", ID: client.ID{1}, IsInsert: true,
		Values: []client.Column{{Name: "title", Value: "Buy milk"}}})
	up, _ := client.Sync(ctx, url, owner, phone, client.SyncOptions{})
	down, _ := client.Sync(ctx, url, owner, laptop, client.SyncOptions{})
	rows, _ := laptop.Rows(ctx, owner.ID(), "todo")
	fmt.Println(up.Sent, down.Received, rows[0].Columns[0].Value)

	cancel()
	<-served
	srv.Close()
	// Output: 1 1 Buy milk
}
