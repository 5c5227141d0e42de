package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/exchange"
	"github.com/ferry-sync/ferry/datasync/quarantine"
)

// peerState is the --state file: every document's snapshot (base64), the
// documents peers named into the space, so the §Bounds ceiling on
// peer-named documents survives a restart, and the engine's actor, so the
// replica's next edit continues its own counter.
type peerState struct {
	Docs      map[string]string `json:"docs"`
	PeerNamed []string          `json:"peer_named"`
	Actor     string            `json:"actor,omitempty"`
}

// quarantineDir is where --state keeps the crash record of blobs in flight.
func quarantineDir(state string) string { return state + ".quarantine" }

// checkStatePath refuses a --state whose directory does not exist (it is
// never created) or that names something other than a file.
func checkStatePath(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("--state %s: directory %s does not exist; create it first", path, filepath.Dir(path))
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("--state %s: not a regular file", path)
	}
	return nil
}

// readPeerState reads the state file; a missing file is an empty state.
func readPeerState(path string) (peerState, error) {
	var st peerState
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("--state %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a file in another layout is an error, not an empty state
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("--state %s is not a ferry peer state file (%v); move it away or name another", path, err)
	}
	return st, nil
}

// peerActor is the engine actor of this replica: the one saved in its
// state, else (a state from before actors were saved) the key's, else a
// new one. Processes sharing a key but not a state must not share an
// actor, or their edits would carry the same dots.
func peerActor(st peerState, path string, self []byte) string {
	if st.Actor != "" {
		return st.Actor
	}
	key := hex.EncodeToString(self[:8])
	if path != "" && len(st.Docs) > 0 {
		return key
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	return key + "-" + hex.EncodeToString(r[:])
}

// loadPeerState loads the documents and the peer-named set of st into sp
// (whose engine is kv) and opens the quarantine ledger beside the state
// file (creating it there).
func loadPeerState(sp *exchange.Space, kv engine.Engine, path string) error {
	st, err := readPeerState(path)
	if err != nil || path == "" {
		return err
	}
	return restorePeerState(sp, kv, st, path)
}

func restorePeerState(sp *exchange.Space, kv engine.Engine, st peerState, path string) error {
	ledger, err := quarantine.OpenDir(quarantineDir(path))
	if err != nil {
		return err
	}
	sp.Ledger = ledger
	for doc, s := range st.Docs {
		snap, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("--state %s: document %q: %w", path, doc, err)
		}
		if out, err := kv.ImportSnapshot(doc, snap); err != nil {
			return fmt.Errorf("--state %s: document %q: %v: %w", path, doc, out, err)
		}
	}
	sp.RestorePeerNamed(st.PeerNamed)
	return nil
}

func savePeerState(sp *exchange.Space, kv engine.Engine, path string) error {
	return savePeerStateAs(sp, kv, path, "")
}

func savePeerStateAs(sp *exchange.Space, kv engine.Engine, path, actor string) error {
	if path == "" {
		return nil
	}
	st := peerState{Docs: map[string]string{}, PeerNamed: sp.PeerNamedDocs(), Actor: actor}
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
