package replica_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/frame"
	"github.com/ferry-sync/ferry/datasync/replica"
	"github.com/ferry-sync/ferry/datasync/transport"
)

// Two replicas of one 1:1 space over the Noise IK transport on loopback:
// the listener admits only the expected key, each side's space is the
// other's authenticated key, and an edit on one side reaches the other.
func ExampleLink() {
	alice, _ := transport.GenerateKey()
	bob, _ := transport.GenerateKey()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	accepted := make(chan transport.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		conn, err := transport.Accept(ctx, c, bob, func(pub []byte) bool {
			return transport.KeyID(pub) == transport.KeyID(alice.Public)
		})
		if err != nil {
			close(accepted)
			return
		}
		accepted <- conn
	}()
	toBob, err := transport.Dial(ctx, ln.Addr().String(), alice, bob.Public)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer toBob.Close()
	toAlice, ok := <-accepted
	if !ok {
		fmt.Println("handshake failed")
		return
	}
	defer toAlice.Close()

	a, _ := engine.NewKV("alice")
	b, _ := engine.NewKV("bob")
	_ = a.Set("notes", "greeting", []byte("hello, bob"))
	opts := replica.Options{Caps: frame.Caps{engine.KVEncoding.Entry, frame.EntryMedia}, Interval: 50 * time.Millisecond}
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	for _, l := range []*replica.Link{replica.New(a, toBob, opts), replica.New(b, toAlice, opts)} {
		go func() { _ = l.Run(run); done <- struct{}{} }()
	}
	for ctx.Err() == nil {
		if v, ok := b.Get("notes", "greeting"); ok {
			fmt.Printf("bob reads %q; the space is alice's key: %v\n", v, toAlice.Peer() == transport.KeyID(alice.Public))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	<-done
	// Output: bob reads "hello, bob"; the space is alice's key: true
}
