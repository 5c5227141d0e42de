package tandem

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/internal/filelock"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// Files in a device directory.
const (
	secretFile = "secret"    // the user secret US, 32 bytes, mode 0600
	dbFile     = "device.db" // everything else (devstore)
	lockFile   = "lock"      // locked (internal/filelock) while the device is open
)

// Options say how to open a device.
type Options struct {
	// Name is what the user calls themselves in collections they create
	// (§8.1) and what a pairing request shows (§6.3).
	Name string
	// Hub, when not zero, is the hub to sync with; it is saved in the
	// device, so later opens may leave it zero. See also SetHub.
	Hub Hub
	// Store, when set, opens the hub instead of Hub: an app that brings its
	// own binding (or an in-memory hub, package memhub) passes it here.
	// It is called when the device syncs, never by Open.
	Store func(ctx context.Context) (hub.Store, error)
	// Logger receives the device's log records; nil means slog.Default().
	Logger *slog.Logger
	// Budget bounds how fast the device logs in to its hub and appends
	// messages, across every connection it makes, so that no loop can trip
	// a provider's limits (docs/hub-providers.md). nil means
	// DefaultBudget().
	Budget *hub.RateBudget
	// ReadOnlyFor is how long a collection the user was removed from, or
	// that its owner deleted, stays readable on the device; zero means 30
	// days (§11.6, §11.9). Then the device stops keeping it, and an owner
	// device destroys a deleted collection's data on the hub (its roster
	// stays, so devices returning late learn what happened).
	ReadOnlyFor time.Duration
	// HoldFor is how long items waiting for a missing roster statement or
	// inventory are kept (§9.4); zero means 30 days. Then they are evicted
	// locally and read from the hub again later; their hub messages are
	// never destroyed because of it.
	HoldFor time.Duration
	// Limits bound what a hub participant can make the device hold and
	// download (§9.4, §10.6); a zero field means its default (see the
	// package documentation, "Bounds").
	Limits Limits
	// RootCAs, when set, are the certificate authorities trusted for the
	// hub's TLS certificate (IMAP and JMAP, syncing and pairing), in place
	// of the system's: a server with a certificate of its own CA.
	RootCAs *x509.CertPool
}

// Limits are a device's bounds on what others post: messages held for a
// missing roster statement, inventory fragments held before assembly, and
// the bytes of one download. A message refused for a bound is remembered
// with the time it was first seen and not downloaded again until the bound
// frees.
type Limits struct {
	MaxHeld                       int // held messages over the device (default 4,096)
	MaxHeldBytes                  int // held envelope bytes over the device (default 32 MiB)
	MaxHeldPerCollection          int // held messages of one collection (default 1,024)
	MaxHeldBytesPerCollection     int // held envelope bytes of one collection (default 8 MiB)
	MaxFragmentBytes              int // inventory fragment bytes over the device (default 32 MiB)
	MaxFragmentBytesPerCollection int // inventory fragment bytes of one collection (default 8 MiB)
	FetchBatchBytes               int // bytes of one download (default 4 MiB)
}

// DefaultBudget is a device's default hub budget: the bindings' login rate
// (10 at once, then one a minute) and 20,000 appended messages at once,
// then 20,000 an hour — enough to publish a collection of 10,000 records
// and rotate it, while a publish retried in a loop still stops at a rate
// no provider minds. docs/decisions/tandem-device-budget.md.
func DefaultBudget() *hub.RateBudget {
	logins, _ := hub.DefaultRates()
	return hub.NewRateBudget(logins, hub.Rate{N: 20_000, Per: time.Hour})
}

// Device is one installation of a Tandem user (§5.3): the user's identity,
// this installation's device ID and clock, and a full replica of the
// user's home and of every collection the user follows (§12.1), kept in
// one directory. Everything works offline; Sync meets the other devices
// through the hub. A Device is safe for concurrent use.
type Device struct {
	dir  string
	db   *deviceDB
	lock *os.File
	us   [32]byte
	opts Options
	log  *slog.Logger

	budget *hub.RateBudget

	mu        sync.Mutex
	eng       *client.Device
	hub       Hub
	store     hub.Store // open connection, nil when not connected
	backupKey string    // set only in the process that created the identity
	status    syncStatus
	changed   chan struct{} // closed at the next change (Changed)
	local     chan struct{} // closed at the next local edit (Run)
	closed    bool
	pollTest  *[2]time.Duration // tests: Run's slow and fast poll (run.go)
}

// Open opens the device in dir, creating it on first run: a new user
// secret (§6.1), a device ID, and an empty home. It never needs the
// network. On first run BackupKey hands back the backup key once, to show
// to the user (§6.3). A directory another process has open gives an error
// with CodeLocked; one written by a newer Ferry, CodeNewerVersion.
func Open(ctx context.Context, dir string, opts Options) (*Device, error) {
	return open(ctx, dir, opts, nil)
}

// Restore installs the user whose backup key is given (§6.3 "Restoring")
// in dir, which must not hold a device yet, and opens it: a new device ID,
// and home and every active membership are found at the next Sync.
func Restore(ctx context.Context, dir, backupKey string, opts Options) (*Device, error) {
	us, err := client.ParseBackupKey(backupKey)
	if err != nil {
		return nil, newErr(CodeBackupKey, err, "this backup key is not right: check each group of four and type it again")
	}
	return open(ctx, dir, opts, &us)
}

func open(ctx context.Context, dir string, opts Options, install *[32]byte) (*Device, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, newErr(CodeInvalid, err, "%s is not a directory", dir)
		}
		if perr := parentExists(dir); perr != nil {
			return nil, perr
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, newErr(CodeStorage, err, "cannot create %s", dir)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	d := &Device{dir: dir, lock: lock, opts: opts, log: opts.Logger, changed: make(chan struct{}), local: make(chan struct{})}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.budget = budgetOf(opts)
	if err := d.load(ctx, install); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

func parentExists(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return newErr(CodeInvalid, err, "%s does not exist: create it first", parent)
	}
	return nil
}

// lockDir takes the directory's lock, or reports that another process
// holds it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, newErr(CodeStorage, err, "cannot open %s", dir)
	}
	if err := filelock.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrLocked) {
			return nil, newErr(CodeLocked, err, "another program has this device open (%s): close it first", dir)
		}
		return nil, newErr(CodeStorage, err, "cannot lock %s", dir)
	}
	return f, nil
}

func (d *Device) release() {
	if d.db != nil {
		d.db.Close()
	}
	if d.lock != nil {
		filelock.Unlock(d.lock)
		d.lock.Close()
	}
}

// load reads (or, on first run or install, writes) the secret and the
// database, and restores the engine. The two must belong together
// (checkFiles): a missing secret is never replaced by a new one, and an
// empty or missing database beside an existing secret is never taken for a
// new device.
func (d *Device) load(ctx context.Context, install *[32]byte) error {
	repair, err := d.checkFiles(ctx, install)
	if err != nil {
		return err
	}
	created, err := d.loadSecret(install, repair)
	if err != nil {
		return err
	}
	db, err := openDeviceDB(ctx, filepath.Join(d.dir, dbFile))
	switch {
	case errors.Is(err, devstore.ErrNewer):
		return newErr(CodeNewerVersion, err, "this device was written by a newer version of Ferry: update Ferry to open it")
	case err != nil:
		return newErr(CodeStorage, err, "cannot open the device's database %s", filepath.Join(d.dir, dbFile))
	}
	d.db = db
	devID, err := d.deviceID(ctx, client.UserIDOf(d.us), created && !repair)
	if err != nil {
		return err
	}
	if !d.opts.Hub.IsZero() {
		if err := d.saveHub(ctx, d.opts.Hub); err != nil {
			return err
		}
	} else if b, _ := db.Meta(ctx, devstore.KeyHub); b != nil {
		if h, err := ParseHub(b); err == nil {
			d.hub = h
		}
	}
	if created && !repair {
		d.backupKey = client.BackupKey(d.us)
	}
	return d.restore(ctx, devID)
}

// restore builds the engine from the database.
func (d *Device) restore(ctx context.Context, devID client.DeviceID) error {
	hb, err := d.db.Meta(ctx, devstore.KeyHLC)
	if err != nil {
		return newErr(CodeStorage, err, "cannot read the device's database")
	}
	hlc, err := devstore.DecodeHLC(hb)
	if err != nil {
		return newErr(CodeDamaged, err, "the device's database %s is damaged", filepath.Join(d.dir, dbFile))
	}
	eng, err := client.New(client.Config{Secret: d.us, Name: d.opts.Name, Logger: d.log, DeviceID: &devID, HLC: hlc, Journal: d.db, HoldFor: d.opts.HoldFor, ReadOnlyFor: d.opts.ReadOnlyFor,
		MaxHeld: d.opts.Limits.MaxHeld, MaxHeldBytes: d.opts.Limits.MaxHeldBytes, MaxHeldPerCollection: d.opts.Limits.MaxHeldPerCollection,
		MaxHeldBytesPerCollection: d.opts.Limits.MaxHeldBytesPerCollection, MaxFragmentBytes: d.opts.Limits.MaxFragmentBytes,
		MaxFragmentBytesPerCollection: d.opts.Limits.MaxFragmentBytesPerCollection, FetchBatchBytes: d.opts.Limits.FetchBatchBytes})
	if err != nil {
		return newErr(CodeInternal, err, "cannot start the device")
	}
	if err := d.db.Scanning(ctx, true); err != nil {
		return newErr(CodeStorage, err, "cannot read the device's database")
	}
	err = eng.Restore(ctx, d.db.Source())
	if serr := d.db.Scanning(ctx, false); err == nil && serr != nil {
		return newErr(CodeStorage, serr, "cannot read the device's database")
	}
	if err != nil {
		return newErr(CodeDamaged, err, "the device's database %s is damaged: put it back from a backup, or move the directory away and restore with your backup key", filepath.Join(d.dir, dbFile))
	}
	d.eng = eng
	if ls, _ := d.db.Meta(ctx, devstore.KeyLastSync); len(ls) == 8 {
		d.status.lastSync = time.UnixMilli(int64(beUint64(ls)))
	}
	return nil
}

// loadSecret reads the user secret, or writes a new one (first run) or the
// installed one (Restore). It reports whether the identity is new here.
func (d *Device) loadSecret(install *[32]byte, repair bool) (bool, error) {
	p := filepath.Join(d.dir, secretFile)
	b, err := os.ReadFile(p)
	switch {
	case err == nil && install != nil && !repair:
		return false, newErr(CodeExists, nil, "%s already holds a device: restore into an empty directory", d.dir)
	case err == nil:
		if len(b) != 32 {
			return false, newErr(CodeStorage, nil, "the identity file %s is damaged", p)
		}
		d.us = [32]byte(b)
		return false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, newErr(CodeStorage, err, "cannot read %s", p)
	}
	if install != nil {
		d.us = *install
	} else if _, err := rand.Read(d.us[:]); err != nil {
		return false, newErr(CodeInternal, err, "no randomness for a new identity")
	}
	if err := writeFileSync(p, d.us[:], 0o600); err != nil {
		return false, newErr(CodeStorage, err, "cannot save the identity in %s", d.dir)
	}
	return true, nil
}

// deviceID returns the device's ID, picking a new one when the secret was
// newly installed (§5.3).
func (d *Device) deviceID(ctx context.Context, uid [32]byte, created bool) (client.DeviceID, error) {
	storedUID, err := d.db.Meta(ctx, devstore.KeyUID)
	if err != nil {
		return client.DeviceID{}, newErr(CodeStorage, err, "cannot read the device's database")
	}
	if storedUID != nil && !bytes.Equal(storedUID, uid[:]) {
		return client.DeviceID{}, newErr(CodeWrongIdentity, nil, "the identity in %s does not match this device's data", d.dir)
	}
	if storedUID == nil && !created {
		// The secret was here before, the data is not: a replaced or
		// emptied database, never a fresh device (checkFiles).
		return client.DeviceID{}, newErr(CodeDamaged, nil, "%s holds no device data: put it back from a backup, or move the directory away and restore with your backup key", filepath.Join(d.dir, dbFile))
	}
	if b, _ := d.db.Meta(ctx, devstore.KeyDeviceID); len(b) == 8 && !created {
		return client.DeviceID(b), nil
	}
	var id client.DeviceID
	if _, err := rand.Read(id[:]); err != nil {
		return id, newErr(CodeInternal, err, "no randomness for a device ID")
	}
	if err := d.db.SetMeta(ctx, map[string][]byte{devstore.KeyDeviceID: id[:], devstore.KeyUID: uid[:]}); err != nil {
		return id, newErr(CodeStorage, err, "cannot save the device ID")
	}
	return id, nil
}

// DamagedOnOpen returns how many stored values and unsent messages failed
// their integrity check when the device was opened (device.db changed on
// disk). A value was dropped, never shown, and is read again from the hub
// at the next Sync; one the hub no longer holds is gone from this device.
// An unsent message was dropped and is never sent: the edit or change it
// carried did not reach the others.
// docs/decisions/tandem-device-integrity.md.
func (d *Device) DamagedOnOpen() int {
	d.mu.Lock()
	eng := d.eng
	d.mu.Unlock()
	if eng == nil {
		return 0
	}
	return eng.DamagedWrites()
}

// BackupKey returns the backup key (§6.3) when this process created the
// identity (first run of Open, or Restore), so the app can show it once
// with "Write this down. It's the only way back in if you lose every
// device". Later it returns false; ShowBackupKey shows it on request.
func (d *Device) BackupKey() (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.backupKey, d.backupKey != ""
}

// ShowBackupKey returns the backup key on the user's request (§6.3: the
// app puts it behind device authentication).
func (d *Device) ShowBackupKey() string { return client.BackupKey(d.us) }

// SetHub connects the device to a hub (§13.1) and saves it. The next Sync
// uses it. A different account than before is a move (§12.4 hub loss, or
// a new account): the device reads the new hub from nothing and publishes
// there everything it holds that the hub lacks — home and every
// collection with its roster — so the user's other devices, moved to the
// same hub, find everything again.
func (d *Device) SetHub(ctx context.Context, h Hub) error {
	if h.IsZero() {
		return newErr(CodeInvalid, nil, "no hub given")
	}
	if old := d.Hub(); !old.IsZero() && !old.Same(h) {
		if err := d.eng.ResetHub(); err != nil {
			return newErr(CodeStorage, err, "cannot reset the device for the new hub")
		}
	}
	return d.saveHub(ctx, h)
}

// MoveToStore is SetHub for an app that brings its own binding
// (Options.Store): from now on the device syncs through open, starting
// from nothing there and publishing what that hub lacks (§12.4).
func (d *Device) MoveToStore(open func(context.Context) (hub.Store, error)) error {
	if err := d.eng.ResetHub(); err != nil {
		return newErr(CodeStorage, err, "cannot reset the device for the new hub")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opts.Store = open
	if d.store != nil {
		d.store.Close()
		d.store = nil
	}
	return nil
}

func (d *Device) saveHub(ctx context.Context, h Hub) error {
	b, err := h.MarshalJSON()
	if err != nil {
		return newErr(CodeInternal, err, "cannot save the hub")
	}
	if err := d.db.SetMeta(ctx, map[string][]byte{devstore.KeyHub: b}); err != nil {
		return newErr(CodeStorage, err, "cannot save the hub")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hub = h
	if d.store != nil {
		d.store.Close()
		d.store = nil
	}
	return nil
}

// Hub returns the hub the device syncs with (zero when none).
func (d *Device) Hub() Hub {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hub
}

// UserID is the user's ID, their public signing key (§5.3).
func (d *Device) UserID() UserID { return UserID(d.eng.UID()) }

// DeviceID is this installation's device ID (§5.3).
func (d *Device) DeviceID() [8]byte { return d.eng.DeviceID() }

// Close closes the device: its hub connection, its database and its lock.
// Everything was already saved.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	if d.store != nil {
		d.store.Close()
		d.store = nil
	}
	d.mu.Unlock()
	d.prune(context.Background())
	d.release()
	return nil
}

// prune drops superseded writes, and earlier rows of writes stored again,
// from the database, so reopening reads little more than the replica
// holds. Pruning reads every row, so it runs only when worth it
// (pruneWorth).
func (d *Device) prune(ctx context.Context) {
	kept := 0
	d.eng.Kept(func([32]byte) { kept++ })
	rows, err := d.db.WriteRows(ctx)
	if err == nil && !pruneWorth(rows, kept, d.eng.DamagedWrites()) {
		return
	}
	keep := make(map[[32]byte]bool, kept)
	d.eng.Kept(func(id [32]byte) { keep[id] = true })
	if n, err := d.db.Prune(ctx, func(id [32]byte) bool { return keep[id] }); err != nil {
		d.log.Warn("tandem: pruning superseded writes", "err", err)
	} else if n > 0 {
		d.log.Debug("tandem: pruned superseded writes", "n", n)
	}
}

// pruneWorth reports whether a database of rows write rows, for kept
// writes the device holds, is worth a prune at Close: when more than a
// sixteenth of the rows (and more than pruneSlack) are dead, or when a row
// was found damaged on open (its good copy, read again, is a later row;
// the damaged one would be reported at every open until pruned). Below
// that, a reopen reads at most about 6 % more rows than it keeps, and a
// Close of a device with 100,000 writes does not scan them all
// (docs/decisions/tandem-device-store.md).
func pruneWorth(rows, kept, damaged int) bool {
	dead := rows - kept
	return damaged > 0 || (dead > pruneSlack && dead > kept/16)
}

// pruneSlack is how many dead rows a database may keep whatever its size.
const pruneSlack = 256

// engine returns the engine, or an error after Close.
func (d *Device) engine() (*client.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, newErr(CodeInvalid, nil, "the device is closed")
	}
	return d.eng, nil
}

func writeFileSync(p string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(p+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// budgetOf is the budget an Options asks for, or a default one.
func budgetOf(o Options) *hub.RateBudget {
	if o.Budget != nil {
		return o.Budget
	}
	return DefaultBudget()
}
