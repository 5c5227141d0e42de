package tandem

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// checkFiles checks, before anything is written, that the secret file and
// device.db of the directory belong together (issue 23; see
// docs/decisions/tandem-device-damage.md):
//
//   - a device.db that is empty, or missing beside a secret, is damage,
//     never a fresh device: unsynced edits would be silently gone;
//   - a secret missing beside a device.db that holds a user is damage: a
//     new secret would be another user. Restore with that user's backup
//     key repairs it (repair = true), keeping the database and its
//     unsynced edits; another user's key is refused.
//
// A device.db without a user (a first run stopped before it finished) is
// no device yet.
func (d *Device) checkFiles(ctx context.Context, install *[32]byte) (repair bool, err error) {
	secretPath, dbPath := filepath.Join(d.dir, secretFile), filepath.Join(d.dir, dbFile)
	_, serr := os.Stat(secretPath)
	hasSecret := serr == nil
	fi, derr := os.Stat(dbPath)
	hasDB := derr == nil
	switch {
	case serr != nil && !errors.Is(serr, fs.ErrNotExist):
		return false, newErr(CodeStorage, serr, "cannot read %s", secretPath)
	case derr != nil && !errors.Is(derr, fs.ErrNotExist):
		return false, newErr(CodeStorage, derr, "cannot read %s", dbPath)
	case hasDB && fi.Size() == 0:
		return false, newErr(CodeDamaged, nil, "%s is empty: this device's data is lost; open a copy from a backup, or move the directory away and restore with your backup key", dbPath)
	case hasSecret && !hasDB:
		return false, newErr(CodeDamaged, nil, "%s is missing: this device's data is lost; put it back from a backup, or move the directory away and restore with your backup key", dbPath)
	case hasSecret || !hasDB:
		return false, nil
	}
	uid, err := dbUser(ctx, dbPath)
	if err != nil || uid == nil {
		return false, err // no user yet: a first run that did not finish
	}
	if install == nil {
		return false, newErr(CodeDamaged, nil, "the identity file %s is missing: restore this device with your backup key to repair it (its unsent edits are kept)", secretPath)
	}
	if want := client.UserIDOf(*install); !bytes.Equal(uid, want[:]) {
		return false, newErr(CodeWrongIdentity, nil, "%s belongs to another user than this backup key: restore into an empty directory", dbPath)
	}
	return true, nil
}

// dbUser returns the user ID a device database at path holds, nil if none.
func dbUser(ctx context.Context, path string) ([]byte, error) {
	db, err := devstore.Open(ctx, path)
	switch {
	case errors.Is(err, devstore.ErrNewer):
		return nil, newErr(CodeNewerVersion, err, "this device was written by a newer version of Ferry: update Ferry to open it")
	case err != nil:
		return nil, newErr(CodeDamaged, err, "%s is damaged or not a Ferry device database", path)
	}
	defer db.Close()
	uid, err := db.Meta(ctx, devstore.KeyUID)
	if err != nil {
		return nil, newErr(CodeDamaged, err, "%s is damaged", path)
	}
	return uid, nil
}
