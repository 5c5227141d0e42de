package client

import "github.com/ferry-sync/ferry/tandem/internal/suite"

// What package tandem needs of a user's identity to install and open a
// device, so that it does not reach tandem/internal/suite itself.

// DeviceID is an installation's device ID (§5.3).
type DeviceID = suite.DeviceID

// UserIDOf is the user ID (the public signing key, §5.3) of user secret us.
func UserIDOf(us [32]byte) [32]byte { return suite.NewIdentity(us).UID }

// BackupKey writes user secret us as a backup key (§6.3).
func BackupKey(us [32]byte) string { return suite.BackupKey(us) }

// ParseBackupKey reads a backup key, checking its check digits (§6.3).
func ParseBackupKey(s string) ([32]byte, error) { return suite.ParseBackupKey(s) }
