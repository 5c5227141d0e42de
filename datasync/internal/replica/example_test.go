package replica_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/replica"
	"github.com/ferry-sync/ferry/datasync/internal/transport"
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

// noisePair connects two fresh keys over Noise IK on loopback, as
// ExampleLink does step by step.
func noisePair(ctx context.Context) (toBob, toAlice transport.Conn, err error) {
	alice, _ := transport.GenerateKey()
	bob, _ := transport.GenerateKey()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan transport.Conn, 1)
	go func() {
		defer close(accepted)
		if c, err := ln.Accept(); err == nil {
			if conn, err := transport.Accept(ctx, c, bob, func([]byte) bool { return true }); err == nil {
				accepted <- conn
			}
		}
	}()
	if toBob, err = transport.Dial(ctx, ln.Addr().String(), alice, bob.Public); err != nil {
		return nil, nil, err
	}
	if toAlice = <-accepted; toAlice == nil {
		toBob.Close()
		return nil, nil, fmt.Errorf("handshake failed")
	}
	return toBob, toAlice, nil
}

// A document holds an attachment reference; the bytes stay with their
// holder until the other side fetches them, over the media path, into its
// blob store (never as a received file).
func ExampleLink_Fetch() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	toBob, toAlice, err := noisePair(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer toBob.Close()
	defer toAlice.Close()
	a, _ := engine.NewKV("alice")
	b, _ := engine.NewKV("bob")
	opts := replica.Options{Caps: frame.Caps{engine.KVEncoding.Entry, frame.EntryMedia}, Interval: 50 * time.Millisecond}
	la, lb := replica.New(a, toBob, opts), replica.New(b, toAlice, opts)

	photo := []byte("pretend this is a photo")
	ref, _ := attach.Of(photo, "photo.jpg", "image/jpeg")
	_ = la.Blobs().Put(ref.Hash, photo)
	_ = a.SetRef("album", "cover", ref)

	run, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	for _, l := range []*replica.Link{la, lb} {
		go func() { _ = l.Run(run); done <- struct{}{} }()
	}
	fetched := false
	for ctx.Err() == nil && !fetched {
		if r, ok := b.Ref("album", "cover"); ok {
			_ = lb.Fetch(ctx, r.Hash) // repeats are bounded; a held blob is not asked again
			if got, ok := lb.Blobs().Get(r.Hash); ok {
				fmt.Printf("bob holds %s (%d bytes): %q\n", r.Name, r.Size, got)
				fetched = true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	<-done
	// Output: bob holds photo.jpg (23 bytes): "pretend this is a photo"
}
