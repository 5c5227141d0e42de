package tandemcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ferry-sync/ferry/tandem"
)

// A profile is one directory holding one device (docs/decisions/cli-profiles.md):
//
//	DIR/profile.json  the CLI's settings: the name the user goes by
//	DIR/state.json    the last sync attempt, for "ferry status"
//	DIR/ferry.log     the device's log (kept under logLimit)
//	DIR/device/       the tandem device (tandem.Open)
//	DIR/ca.pem        the mail server's CA, from connect --ca-file (trust.go)
const (
	profileFile = "profile.json"
	stateFile   = "state.json"
	logFile     = "ferry.log"
	deviceDir   = "device"
	logLimit    = 1 << 20
)

// profileJSON is profile.json.
type profileJSON struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
}

// stateJSON is state.json: what the last sync attempt ended with.
type stateJSON struct {
	LastAttempt time.Time `json:"last_attempt"`
	Kind        string    `json:"kind,omitempty"`    // "" after a success, else the error's kind
	Message     string    `json:"message,omitempty"` // the error's message
}

// profileDir resolves the profile directory: --profile, then FERRY_HOME,
// then $XDG_DATA_HOME/ferry, then ~/.local/share/ferry. dflt reports
// whether it is the default location (whose base may be created, as the
// XDG base directory specification says).
func (a *app) profileDir() (dir string, dflt bool, err error) {
	p := a.profile
	if p == "" {
		p = a.getenv("FERRY_HOME")
	}
	if p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", false, usagef("--profile %q is not a usable path", p)
		}
		return abs, false, nil
	}
	base := a.getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) { // the XDG spec: a relative path is ignored
		home := a.getenv("HOME")
		if home == "" {
			return "", false, usagef("no place for the profile: pass --profile DIR or set FERRY_HOME")
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "ferry"), true, nil
}

// createProfile makes the profile directory: its parent must exist
// (only the default location's base is created). undo removes what it
// made, for a command that fails before the profile is set up.
func (a *app) createProfile() (dir string, undo func(), err error) {
	dir, dflt, err := a.profileDir()
	if err != nil {
		return "", nil, err
	}
	parent := filepath.Dir(dir)
	if dflt {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", nil, failf("storage", "cannot create %s: %v", parent, pathErr(err))
		}
	}
	switch fi, err := os.Stat(parent); {
	case errors.Is(err, fs.ErrPermission):
		return "", nil, failf("storage", "cannot use %s: permission denied (choose another --profile)", parent)
	case err == nil && !fi.IsDir():
		return "", nil, failf("invalid", "%s is a file, not a directory: choose another --profile", parent)
	case err != nil:
		return "", nil, failf("invalid", "%s does not exist: create it first, or choose another --profile", parent)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return "", nil, failf("invalid", "%s is a file, not a profile directory: choose another --profile", dir)
	}
	err = os.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, failf("storage", "cannot create %s: %v", dir, pathErr(err))
	}
	made := err == nil
	_, hadLog := os.Stat(filepath.Join(dir, logFile))
	return dir, func() {
		if hadLog != nil {
			os.Remove(filepath.Join(dir, logFile))
		}
		if made {
			os.Remove(dir) // only if empty
		}
	}, nil
}

// pathErr is the short reason of a file system error.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readProfile reads an initialized profile's settings.
func readProfile(dir string) (profileJSON, error) {
	var p profileJSON
	b, err := os.ReadFile(filepath.Join(dir, profileFile))
	if errors.Is(err, fs.ErrNotExist) {
		return p, failf("no_device", "there is no Ferry device in %s yet: run ferry init (or ferry restore with your backup key)", dir)
	}
	if err != nil {
		return p, failf("storage", "cannot read %s: %v", filepath.Join(dir, profileFile), pathErr(err))
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Version != 1 {
		return p, failf("storage", "%s is damaged: move it away and run ferry init", filepath.Join(dir, profileFile))
	}
	return p, nil
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return failf("storage", "cannot write %s: %v", path, pathErr(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return failf("storage", "cannot write %s: %v", path, pathErr(err))
	}
	return nil
}

func readState(dir string) stateJSON {
	var s stateJSON
	readJSON(filepath.Join(dir, stateFile), &s)
	return s
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// session is an open profile: its directory, settings and device.
type session struct {
	dir     string
	prof    profileJSON
	dev     *tandem.Device
	log     *os.File
	trust   *trust // the CAs trusted for the mail server (nil: the system's)
	verbose bool   // -v: the log on stderr too
	watcher bool   // sync --watch: never asks another process to yield
	unyield func() // removes this process's yield request
}

// lockWait is how long a command waits for another ferry process (a
// sync, or a sync --watch stepping aside) to let go of the device.
const lockWait = 15 * time.Second

// watcherLockWait is how long sync --watch waits for the device: enough
// for a command that runs between two of its rounds.
const watcherLockWait = 3 * time.Second

// open opens the initialized profile's device.
func (a *app) open(ctx context.Context) (*session, error) { return a.openAs(ctx, false) }

// openList opens the device and finds the list a user named (before any
// sync); the caller closes the session.
func (a *app) openList(ctx context.Context, name string) (*session, listInfo, error) {
	s, err := a.open(ctx)
	if err != nil {
		return nil, listInfo{}, err
	}
	l, err := findList(s.dev, name)
	if err != nil {
		s.close()
		return nil, listInfo{}, err
	}
	return s, l, nil
}

// openAs opens the device; a watcher does not ask others to yield.
func (a *app) openAs(ctx context.Context, watcher bool) (*session, error) {
	dir, _, err := a.profileDir()
	if err != nil {
		return nil, err
	}
	prof, err := readProfile(dir)
	if err != nil {
		return nil, err
	}
	s := &session{dir: dir, prof: prof, watcher: watcher, trust: a.trust, verbose: a.verbose}
	if s.trust == nil {
		if s.trust, err = profileTrust(dir); err != nil {
			return nil, err
		}
	}
	if err := s.openDevice(ctx, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// openDevice opens (or, with restoreKey, installs) the device, waiting a
// little while another ferry process has it open.
func (s *session) openDevice(ctx context.Context, restoreKey *string) error {
	s.log = openLog(s.dir)
	finishStartOver(s.dir)
	opts := tandem.Options{Name: s.prof.Name, Logger: s.logger(), RootCAs: s.trust.roots()}
	deadline := time.Now().Add(lockWait)
	if s.watcher { // a command between two of the watcher's runs, or another watcher
		deadline = time.Now().Add(watcherLockWait)
	}
	for {
		var err error
		if restoreKey != nil {
			s.dev, err = tandem.Restore(ctx, filepath.Join(s.dir, deviceDir), *restoreKey, opts)
		} else {
			s.dev, err = tandem.Open(ctx, filepath.Join(s.dir, deviceDir), opts)
		}
		if err == nil {
			if n := s.dev.DamagedOnOpen(); n > 0 { // device.db changed on disk: said on every command until a sync reads them again
				fmt.Fprintf(newSafeWriter(os.Stderr), "ferry: %d stored value(s) or unsent change(s) in %s were damaged on disk and are not shown or sent; ferry sync reads the values again from the mail account (a dropped change must be made again).\n", n, s.dir)
			}
			return nil
		}
		if tandem.CodeOf(err) != tandem.CodeLocked || time.Now().After(deadline) {
			s.closeLog()
			s.release()
			switch {
			case tandem.CodeOf(err) == tandem.CodeLocked && s.watcher:
				return failf("locked", "another ferry sync --watch (or a share or device add that waits) has %s open: one at a time", s.dir)
			case tandem.CodeOf(err) == tandem.CodeLocked:
				return failf("locked", "another ferry command has the profile %s open and did not let go within %s: try again when it is done", s.dir, lockWait)
			}
			return err
		}
		if s.unyield == nil && !s.watcher {
			s.unyield = requestYield(s.dir)
		}
		select {
		case <-ctx.Done():
			s.closeLog()
			s.release()
			return failf("interrupted", "stopped")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *session) logger() *slog.Logger {
	var w io.Writer = io.Discard
	if s.log != nil {
		w = s.log
	}
	level := slog.LevelInfo
	if s.verbose { // -v: everything the device says, on stderr too
		w, level = io.MultiWriter(w, newSafeWriter(os.Stderr)), slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// openLog opens the profile's log for appending, starting it afresh when
// it has grown past logLimit (the previous one is kept as ferry.log.1).
func openLog(dir string) *os.File {
	p := filepath.Join(dir, logFile)
	if fi, err := os.Stat(p); err == nil && fi.Size() > logLimit {
		os.Rename(p, p+".1")
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	return f
}

func (s *session) closeLog() {
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}

// release withdraws this process's yield request.
func (s *session) release() {
	if s.unyield != nil {
		s.unyield()
		s.unyield = nil
	}
}

// close closes the device and the log.
func (s *session) close() {
	if s.dev != nil {
		s.dev.Close()
		s.dev = nil
	}
	s.closeLog()
	s.release()
}
