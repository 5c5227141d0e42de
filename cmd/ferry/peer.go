package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/datasync"
	"github.com/ferry-sync/ferry/datasync/engine"
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
	var show bool
	cmd := &cobra.Command{
		Use:   "keygen KEYFILE",
		Short: "Create a static key pair and print its public key (--show: print an existing one's)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if show {
				k, err := loadPeerKey(args[0])
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), k.Public())
				return err
			}
			k, err := datasync.GenerateKey()
			if err != nil {
				return err
			}
			b, _ := json.Marshal(peerKeyFile{Private: hex.EncodeToString(k.PrivateBytes()), Public: k.Public().String()})
			f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("key file %s exists; print its public key with 'ferry peer keygen --show %s'", args[0], args[0])
			}
			if err != nil {
				return fmt.Errorf("key file %s: %w", args[0], err)
			}
			if _, err := f.Write(b); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k.Public())
			return err
		},
	}
	cmd.Flags().BoolVar(&show, "show", false, "print the public key of the existing KEYFILE instead of creating one")
	return cmd
}

func loadPeerKey(path string) (datasync.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return datasync.Key{}, fmt.Errorf("key file %s cannot be read (%v); create one with 'ferry peer keygen %s'", path, errors.Unwrap(err), path)
	}
	var kf peerKeyFile
	if err := json.Unmarshal(b, &kf); err != nil {
		return datasync.Key{}, fmt.Errorf("key file %s is not a ferry peer key file", path)
	}
	priv, err := hex.DecodeString(kf.Private)
	if err != nil {
		return datasync.Key{}, fmt.Errorf("key file %s: not a key pair", path)
	}
	k, err := datasync.KeyFromPrivate(priv)
	if err != nil || k.Public().String() != kf.Public {
		return datasync.Key{}, fmt.Errorf("key file %s: not a key pair", path)
	}
	return k, nil
}

type peerRun struct {
	key, peer, listen, connect, state string
	engine                            string
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

One space for the process is reused for every connection: the listener
accepts the peer again after a link ends (and several links at once), and
the connecting side redials. Progress (connected, documents sent and
received, links ending) goes to stderr.

It exits 2, saying why on stderr, when the command line is wrong (a flag
missing, doubled or with a bad value, --peer naming our own key), and 1
when it could not do its work: a key or state file it cannot use, the
connecting side not reaching the peer within 30 seconds (or --for) of
starting, a failed handshake (the address is not a ferry peer, or it
refused our key), an --expect not met.

With --state, the documents peers have named (the 1,024-document ceiling)
are saved with them, and STATE.quarantine/ records every peer blob in
flight to the document engine: a blob that ended the process is refused
on every later run and reported on stderr. The directory of --state must
exist; nothing is created until every input has been checked.

--engine loro keeps the documents as Loro documents (the reference's
encoding, frame version 1, byte-compatible with loro-crdt); both peers
must run the same engine, or neither reads the other's frames.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.key, "key", "", "key file from 'ferry peer keygen' (required)")
	f.StringVar(&o.peer, "peer", "", "the peer's public key, hex (required)")
	f.StringVar(&o.listen, "listen", "", "address to listen on")
	f.StringVar(&o.connect, "connect", "", "address to connect to")
	f.StringVar(&o.state, "state", "", "file the documents are loaded from and saved to")
	f.StringVar(&o.engine, "engine", "kv", "document engine: kv (Ferry's encoding) or loro (the reference's)")
	f.StringArrayVar(&o.sets, "set", nil, "local edit doc/key=value (repeatable)")
	f.StringArrayVar(&o.expect, "expect", nil, "stop once doc/key is present (repeatable)")
	f.DurationVar(&o.duration, "for", 0, "run at most this long (default: until interrupted)")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "anti-entropy offer interval")
	f.DurationVar(&o.linger, "linger", time.Second, "keep syncing this long after --expect is met")
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("peer")
	return cmd
}

// peerUsage is a command-line error: a flag missing, doubled or with a
// bad value (exit 2, like every usage error of ferry).
func peerUsage(format string, args ...any) error {
	return &tandemcli.Error{Exit: tandemcli.ExitUsage, Kind: "usage", Msg: fmt.Sprintf(format, args...)}
}

// peerInputs is what the flags say, checked: nothing has been created yet.
type peerInputs struct {
	self   datasync.Key
	peer   datasync.PublicKey
	actor  string
	sets   [][3]string // doc, key, value
	expect [][2]string // doc, key
}

// check validates every input before anything is created or bound.
func (o *peerRun) check(cmd *cobra.Command) (peerInputs, error) {
	var in peerInputs
	if (o.listen == "") == (o.connect == "") {
		return in, peerUsage("give exactly one of --listen ADDR and --connect ADDR")
	}
	for _, a := range []string{o.listen, o.connect} {
		if _, _, err := net.SplitHostPort(a); a != "" && err != nil {
			return in, peerUsage("address %q is not host:port", a)
		}
	}
	if cmd.Flags().Changed("for") && o.duration <= 0 {
		return in, peerUsage("--for %v: give a positive duration such as 30s, or leave it out to run until interrupted", o.duration)
	}
	if o.interval <= 0 {
		return in, peerUsage("--interval %v: give a positive duration such as 2s", o.interval)
	}
	if o.linger < 0 {
		return in, peerUsage("--linger %v: give zero or a positive duration", o.linger)
	}
	if o.engine != "kv" && o.engine != "loro" {
		return in, peerUsage("--engine %q: give kv or loro", o.engine)
	}
	var err error
	if in.self, err = loadPeerKey(o.key); err != nil {
		return in, err
	}
	if in.peer, err = datasync.ParsePublicKey(o.peer); err != nil {
		return in, peerUsage("--peer is not a 32-byte hex public key (print one with 'ferry peer keygen --show KEYFILE')")
	}
	if in.peer == in.self.Public() {
		return in, peerUsage("--peer is this replica's own public key; give the other replica's")
	}
	for _, s := range o.sets {
		doc, key, val, ok := parseDocKey(s, true)
		if !ok {
			return in, peerUsage("--set %q: want doc/key=value", s)
		}
		in.sets = append(in.sets, [3]string{doc, key, val})
	}
	for _, e := range o.expect {
		doc, key, _, ok := parseDocKey(e, false)
		if !ok {
			return in, peerUsage("--expect %q: want doc/key", e)
		}
		in.expect = append(in.expect, [2]string{doc, key})
	}
	if err := checkStatePath(o.state); err != nil {
		return in, err
	}
	in.actor, err = peerActor(o.state, in.self.Public())
	return in, err
}

func (o *peerRun) run(cmd *cobra.Command) error {
	in, err := o.check(cmd)
	if err != nil {
		return err
	}
	var ln net.Listener
	if o.listen != "" {
		var lc net.ListenConfig
		if ln, err = lc.Listen(cmd.Context(), "tcp", o.listen); err != nil {
			return fmt.Errorf("cannot listen on %s: %v", o.listen, errors.Unwrap(err))
		}
		defer ln.Close()
	}
	kv, err := openPeerEngine(cmd.Context(), o.engine, in.actor)
	if err != nil {
		return err
	}
	defer kv.close(context.WithoutCancel(cmd.Context()))
	srv := &peerServer{self: in.self.Public(), peer: in.peer, log: cmd.ErrOrStderr()}
	srv.node, err = datasync.Open(o.state, kv, in.self, datasync.Options{
		Interval: o.interval, Actor: in.actor, Report: srv.report, Events: srv.event})
	if err != nil {
		return fmt.Errorf("--state %s: %v", o.state, cause(err))
	}
	for _, s := range in.sets {
		err := srv.node.Update(cmd.Context(), s[0], func(engine.Engine) error { return kv.setText(s[0], s[1], s[2]) })
		if err != nil {
			return fmt.Errorf("--set %s/%s: %w", s[0], s[1], err)
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
	go o.watchExpect(ctx, kv, in.expect, stop)
	var serveErr error
	if ln != nil {
		serveErr = srv.listen(ctx, ln)
	} else {
		serveErr = srv.dial(ctx, o.connect)
	}
	if err := srv.node.Save(); err != nil {
		return fmt.Errorf("--state %s not saved: %v", o.state, cause(err))
	}
	if serveErr != nil {
		return serveErr
	}
	out := map[string]map[string]string{}
	for _, d := range kv.Docs() {
		out[d] = kv.texts(d)
	}
	if err := json.NewEncoder(cmd.OutOrStdout()).Encode(out); err != nil {
		return err
	}
	if missing := missingExpect(kv, in.expect); len(missing) > 0 {
		return fmt.Errorf("--expect not met: %s never arrived; is the peer running with these edits?", strings.Join(missing, ", "))
	}
	return nil
}

// watchExpect stops the run --linger after every --expect is present.
func (o *peerRun) watchExpect(ctx context.Context, kv peerEngine, expect [][2]string, stop func()) {
	if len(expect) == 0 {
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
		if len(missingExpect(kv, expect)) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.linger):
			}
			stop()
			return
		}
	}
}

func missingExpect(kv peerEngine, expect [][2]string) []string {
	var missing []string
	for _, e := range expect {
		if !kv.hasKey(e[0], e[1]) {
			missing = append(missing, e[0]+"/"+e[1])
		}
	}
	return missing
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
