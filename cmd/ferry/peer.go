package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/exchange"
	"github.com/ferry-sync/ferry/datasync/frame"
	"github.com/ferry-sync/ferry/datasync/quarantine"
	"github.com/ferry-sync/ferry/datasync/replica"
	"github.com/ferry-sync/ferry/datasync/transport"
)

// newPeerCmd is "ferry peer": a DATA_V1 document replica that syncs with one
// other over TCP (Noise IK; the space is the peer's authenticated key).
func newPeerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "peer",
		Short: "Run a DATA_V1 document replica that syncs with another over TCP",
	}
	cmd.AddCommand(newPeerKeygenCmd(), newPeerRunCmd())
	return cmd
}

type peerKeyFile struct {
	Private string `json:"private"`
	Public  string `json:"public"`
}

func newPeerKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen KEYFILE",
		Short: "Create a static key pair and print its public key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := transport.GenerateKey()
			if err != nil {
				return err
			}
			b, _ := json.Marshal(peerKeyFile{Private: hex.EncodeToString(k.Private), Public: hex.EncodeToString(k.Public)})
			f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(b); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), hex.EncodeToString(k.Public))
			return err
		},
	}
}

func loadPeerKey(path string) (transport.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return transport.Key{}, err
	}
	var kf peerKeyFile
	if err := json.Unmarshal(b, &kf); err != nil {
		return transport.Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	priv, err1 := hex.DecodeString(kf.Private)
	pub, err2 := hex.DecodeString(kf.Public)
	if err1 != nil || err2 != nil || len(priv) != 32 || len(pub) != 32 {
		return transport.Key{}, fmt.Errorf("key file %s: not a key pair", path)
	}
	return transport.Key{Private: priv, Public: pub}, nil
}

type peerRun struct {
	key, peer, listen, connect, state string
	sets, expect                      []string
	duration, interval, linger        time.Duration
}

func newPeerRunCmd() *cobra.Command {
	var o peerRun
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Sync documents with one peer, then print them as JSON",
		Long: `Run a replica of one 1:1 space: the documents shared with the peer whose
public key is --peer. One side listens, the other connects. Local edits
(--set doc/key=value) are applied at start. The replica runs for --for (or
until interrupted, or until every --expect doc/key is present, plus
--linger), then prints every document as JSON and saves --state.

With --state, the documents peers have named (the 1,024-document ceiling)
are saved with them, and STATE.quarantine/ records every peer blob in
flight to the document engine: a blob that ended the process is refused
on every later run and reported on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.key, "key", "", "key file from 'ferry peer keygen' (required)")
	f.StringVar(&o.peer, "peer", "", "the peer's public key, hex (required)")
	f.StringVar(&o.listen, "listen", "", "address to listen on")
	f.StringVar(&o.connect, "connect", "", "address to connect to")
	f.StringVar(&o.state, "state", "", "file the documents are loaded from and saved to")
	f.StringArrayVar(&o.sets, "set", nil, "local edit doc/key=value (repeatable)")
	f.StringArrayVar(&o.expect, "expect", nil, "stop once doc/key is present (repeatable)")
	f.DurationVar(&o.duration, "for", 0, "run at most this long (0: until interrupted)")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "anti-entropy offer interval")
	f.DurationVar(&o.linger, "linger", time.Second, "keep syncing this long after --expect is met")
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("peer")
	return cmd
}

func (o *peerRun) run(cmd *cobra.Command) error {
	if (o.listen == "") == (o.connect == "") {
		return errors.New("exactly one of --listen and --connect")
	}
	self, err := loadPeerKey(o.key)
	if err != nil {
		return err
	}
	peerPub, err := hex.DecodeString(o.peer)
	if err != nil || len(peerPub) != 32 {
		return errors.New("--peer is not a 32-byte hex public key")
	}
	kv, err := engine.NewKV(hex.EncodeToString(self.Public[:8]))
	if err != nil {
		return err
	}
	sp := &exchange.Space{Engine: kv,
		Report: func(r exchange.Report) { fmt.Fprintln(cmd.ErrOrStderr(), "ferry peer: cannot replicate:", r) }}
	if err := loadPeerState(sp, kv, o.state); err != nil {
		return err
	}
	for _, s := range o.sets {
		doc, key, val, ok := parseDocKey(s, true)
		if !ok {
			return fmt.Errorf("--set %q: want doc/key=value", s)
		}
		if err := kv.Set(doc, key, []byte(val)); err != nil {
			return err
		}
	}
	ctx := cmd.Context()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go o.watchExpect(ctx, kv, stop)
	err = o.serve(ctx, sp, self, peerPub, cmd)
	if ctx.Err() == nil && err != nil {
		return err
	}
	if err := savePeerState(sp, kv, o.state); err != nil {
		return err
	}
	out := map[string]map[string]string{}
	for _, d := range kv.Docs() {
		out[d] = kv.Values(d)
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	return enc.Encode(out)
}

// serve keeps one link to the peer up until ctx ends: listening, or
// connecting with retries.
// The one space (sp) outlives every connection, so its peer-named count and
// quarantine ledger do too.
func (o *peerRun) serve(ctx context.Context, sp *exchange.Space, self transport.Key, peerPub []byte, cmd *cobra.Command) error {
	want := transport.KeyID(peerPub)
	opts := replica.Options{Caps: frame.Caps{engine.KVEncoding.Entry, frame.EntryMedia}, Interval: o.interval}
	if o.listen != "" {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", o.listen)
		if err != nil {
			return err
		}
		stopLn := context.AfterFunc(ctx, func() { ln.Close() })
		defer stopLn()
		defer ln.Close()
		for ctx.Err() == nil {
			c, err := ln.Accept()
			if err != nil {
				continue
			}
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a silent client must not hold the listener
			conn, err := transport.Accept(hctx, c, self, func(p []byte) bool { return transport.KeyID(p) == want })
			cancel()
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "ferry peer:", err)
				continue
			}
			o.runLink(ctx, sp, conn, opts)
		}
		return ctx.Err()
	}
	for ctx.Err() == nil {
		conn, err := transport.Dial(ctx, o.connect, self, peerPub)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		o.runLink(ctx, sp, conn, opts)
	}
	return ctx.Err()
}

func (o *peerRun) runLink(ctx context.Context, sp *exchange.Space, conn transport.Conn, opts replica.Options) {
	defer conn.Close()
	l := replica.NewInSpace(sp, conn, opts)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); <-ctx.Done(); conn.Close() }()
	_ = l.Run(ctx)
	conn.Close()
	wg.Wait()
}

func (o *peerRun) watchExpect(ctx context.Context, kv *engine.KV, stop func()) {
	if len(o.expect) == 0 {
		return
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		met := true
		for _, e := range o.expect {
			doc, key, _, _ := parseDocKey(e, false)
			if _, ok := kv.Get(doc, key); !ok {
				met = false
			}
		}
		if met {
			select {
			case <-ctx.Done():
			case <-time.After(o.linger):
			}
			stop()
			return
		}
	}
}

func parseDocKey(s string, withValue bool) (doc, key, val string, ok bool) {
	doc, rest, ok := strings.Cut(s, "/")
	if !ok || doc == "" {
		return "", "", "", false
	}
	if !withValue {
		return doc, rest, "", rest != ""
	}
	key, val, ok = strings.Cut(rest, "=")
	return doc, key, val, ok && key != ""
}

// peerState is the --state file: every document's snapshot (base64) and
// the documents peers named into the space, so the §Bounds ceiling on
// peer-named documents survives a restart.
type peerState struct {
	Docs      map[string]string `json:"docs"`
	PeerNamed []string          `json:"peer_named"`
}

// quarantineDir is where --state keeps the crash record of blobs in flight.
func quarantineDir(state string) string { return state + ".quarantine" }

// loadPeerState loads the documents and the peer-named set into sp (whose
// engine is kv) and opens the quarantine ledger beside the state file.
func loadPeerState(sp *exchange.Space, kv *engine.KV, path string) error {
	if path == "" {
		return nil
	}
	ledger, err := quarantine.OpenDir(quarantineDir(path))
	if err != nil {
		return err
	}
	sp.Ledger = ledger
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st peerState
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a file in another layout is an error, not an empty state
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	for doc, s := range st.Docs {
		snap, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("state %s: %w", path, err)
		}
		if out, err := kv.ImportSnapshot(doc, snap); err != nil {
			return fmt.Errorf("state %s: document %q: %v: %w", path, doc, out, err)
		}
	}
	sp.RestorePeerNamed(st.PeerNamed)
	return nil
}

func savePeerState(sp *exchange.Space, kv *engine.KV, path string) error {
	if path == "" {
		return nil
	}
	st := peerState{Docs: map[string]string{}, PeerNamed: sp.PeerNamedDocs()}
	for _, d := range kv.Docs() {
		snap, err := kv.Snapshot(d)
		if err != nil {
			return err
		}
		st.Docs[d] = base64.StdEncoding.EncodeToString(snap)
	}
	b, _ := json.Marshal(st)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
