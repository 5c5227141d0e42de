package tandemcli

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"github.com/ferry-sync/ferry/tandem"
)

// This file is the profile's face for other front ends of the same
// profile (ferry app): where it is, making one, and opening its device
// the way sync --watch does, so that every ferry command keeps working
// beside them (docs/decisions/cli-profiles.md).

// Profile is an open profile: its directory, the name its user goes by and
// its device. Close it to let other ferry commands have the device.
type Profile struct{ s *session }

// ProfileDir resolves the profile directory as every ferry command does:
// flag (--profile), then FERRY_HOME, then $XDG_DATA_HOME/ferry.
func ProfileDir(flag string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir, _, err := (&app{profile: flag, getenv: getenv}).profileDir()
	return dir, err
}

// HasProfile reports whether dir is a set-up profile (ferry init ran).
func HasProfile(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, profileFile))
	return err == nil
}

// CheckName checks a name a user goes by, as ferry init --name does.
func CheckName(name string) (string, error) {
	return (&app{getenv: func(string) string { return "" }}).userName(name)
}

// OpenProfile opens dir's device as sync --watch does: it waits only a
// little for another ferry command that has it (then fails with an
// error whose kind is "locked"), and asks nobody to step aside.
func OpenProfile(ctx context.Context, dir string) (*Profile, error) {
	prof, err := readProfile(dir)
	if err != nil {
		return nil, err
	}
	s := &session{dir: dir, prof: prof, watcher: true}
	if err := s.openDevice(ctx, nil); err != nil {
		return nil, err
	}
	return &Profile{s: s}, nil
}

// CreateProfile makes dir a profile (which must not be one yet) of a new
// identity named name, as ferry init does, or with restoreKey of the
// identity whose backup key it is, as ferry restore does. A new identity's
// backup key is returned, to show once.
func CreateProfile(ctx context.Context, dir, name, restoreKey string) (*Profile, string, error) {
	if HasProfile(dir) {
		return nil, "", failf("exists", "%s already holds a device", dir)
	}
	a := &app{profile: dir, getenv: func(string) string { return "" }}
	dir, undo, err := a.createProfile()
	if err != nil {
		return nil, "", err
	}
	s := &session{dir: dir, prof: profileJSON{Version: 1, Name: name}, watcher: true}
	var key *string
	if restoreKey != "" {
		key = &restoreKey
	}
	if err := s.openDevice(ctx, key); err != nil {
		undo()
		return nil, "", err
	}
	if err := writeJSON(filepath.Join(dir, profileFile), s.prof); err != nil {
		s.close()
		return nil, "", err
	}
	backup, _ := s.dev.BackupKey()
	return &Profile{s: s}, groupKey(backup), nil
}

// PairProfile starts adding this profile (dir, not one yet) as a device of
// the user who shows the pairing payload (ferry device join). finish makes
// the profile once j.Device has returned the device.
func PairProfile(ctx context.Context, dir, name, payload string) (j *tandem.PairingJoin, finish func(*tandem.Device) (*Profile, error), err error) {
	if HasProfile(dir) {
		return nil, nil, failf("exists", "%s already holds a device", dir)
	}
	a := &app{profile: dir, getenv: func(string) string { return "" }}
	dir, undo, err := a.createProfile()
	if err != nil {
		return nil, nil, err
	}
	s := &session{dir: dir, prof: profileJSON{Version: 1, Name: name}, watcher: true}
	s.log = openLog(dir)
	j, err = tandem.JoinDevice(ctx, filepath.Join(dir, deviceDir), payload, tandem.Options{Name: name, Logger: s.logger()})
	if err != nil {
		s.closeLog()
		undo()
		return nil, nil, err
	}
	return j, func(d *tandem.Device) (*Profile, error) {
		s.dev = d
		if err := writeJSON(filepath.Join(dir, profileFile), s.prof); err != nil {
			s.close()
			return nil, err
		}
		return &Profile{s: s}, nil
	}, nil
}

// Device is the profile's open device.
func (p *Profile) Device() *tandem.Device { return p.s.dev }

// Name is the name the profile's user goes by.
func (p *Profile) Name() string { return p.s.prof.Name }

// Dir is the profile's directory.
func (p *Profile) Dir() string { return p.s.dir }

// SaveSync records how a sync ended, for ferry status.
func (p *Profile) SaveSync(err error) { p.s.saveState(err) }

// Close closes the device and the profile's log.
func (p *Profile) Close() { p.s.close() }

// Message is the one line for a person that err calls for, as ferry
// prints it (without the "ferry: " prefix).
func Message(err error) string { return classify(err).Msg }

// Kind is err's stable word (locked, offline, auth, not_found, ...).
func Kind(err error) string { return classify(err).Kind }

// YieldRequested reports whether a ferry command waits for the device of
// the profile in dir.
func YieldRequested(dir string) bool { return yieldRequested(dir) }

// Join asks to join the list an invite names, as ferry join does (ferry
// status then tells where it stands); the request goes out at the next sync.
func (p *Profile) Join(ctx context.Context, invite string) (tandem.CollectionID, error) {
	info, err := tandem.ParseInvite(invite)
	if err != nil {
		return tandem.CollectionID{}, err
	}
	id, err := p.s.dev.Join(ctx, invite, p.s.prof.Name)
	if err != nil {
		return id, err
	}
	j := pendingJoin{List: id.String(), Hint: info.Hint, Owner: info.By.Name}
	joins := slices.DeleteFunc(readJoins(p.s.dir), func(x pendingJoin) bool { return x.List == j.List })
	return id, writeJSON(filepath.Join(p.s.dir, joinsFile), append(joins, j))
}

// JoinState is where a request to join a list stands.
type JoinState struct {
	List    tandem.CollectionID
	State   string // waiting, declined, active, left
	Message string // for a person: "Waiting for Aimee to approve."
}

// Joins lists the lists this profile asked to join, as ferry status does.
func (p *Profile) Joins() []JoinState {
	var out []JoinState
	for _, j := range readJoins(p.s.dir) {
		m := membership(p.s.dev, j)
		id, _ := tandem.ParseCollectionID(j.List)
		out = append(out, JoinState{List: id, State: m.State, Message: m.Message})
	}
	return out
}

// ListState is a list as ferry lists shows it.
type ListState struct {
	Name    string   // the names joined with " | " after concurrent renames
	Names   []string // every concurrent name
	State   tandem.CollectionState
	Removed bool        // the owner removed the user: read-only
	Role    tandem.Role // the user's ("" while not listed)
}

// ListOf reads collection c as ferry lists shows it.
func ListOf(d *tandem.Device, c tandem.CollectionID) (ListState, error) {
	l, err := oneList(d, c)
	return ListState{Name: l.Name, Names: l.Names, State: l.State, Removed: l.Removed, Role: l.Role}, err
}

// AuthorName is who wrote a value, by the name the list knows them by.
func AuthorName(a tandem.Author) string { return authorName(a) }
