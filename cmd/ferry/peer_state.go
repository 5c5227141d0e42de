package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/datasync"
)

// The --state file is a datasync.Node's state file: the documents, the
// documents peers named (the 1,024-document ceiling), and the actor the
// documents were written under; STATE.quarantine beside it is the node's
// quarantine (docs/decisions/datasync-peer-state.md).

// quarantineDir is where the node keeps the quarantine of a state file.
func quarantineDir(state string) string { return state + ".quarantine" }

// checkStatePath checks --state before anything is created: its directory
// must exist, and an existing file must be a regular file.
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

// peerActor is the actor the replica writes as: the one saved in --state,
// else its key's first 8 bytes and a random suffix (a replica without state
// is a new replica each run, and must not reuse an actor's clock).
func peerActor(path string, self datasync.PublicKey) (string, error) {
	if path != "" {
		saved, err := datasync.SavedActor(path)
		if err != nil {
			return "", fmt.Errorf("--state %s is not a ferry peer state file (%v); move it away or name another", path, cause(err))
		}
		if saved != "" {
			return saved, nil
		}
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(self[:8]) + "-" + hex.EncodeToString(r[:]), nil
}
