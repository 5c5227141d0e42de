package tandem

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// syncStatus is what the device knows of its last syncs. Device.mu guards it.
type syncStatus struct {
	lastSync time.Time // last Sync that completed
	offline  bool      // the last attempt could not reach the hub
	lastErr  error     // the last attempt's error, nil after a success
	rejected int       // messages rejected since the device was opened
	watching bool      // Run is connected and watching the hub
	healed   int       // records and statements healed since the device was opened
}

// SyncReport says what one Sync did.
type SyncReport struct {
	Published int // messages this device appended (or found already on the hub)
	Fetched   int // message bodies downloaded
	Applied   int // messages merged
	Rejected  int // messages refused (forged, malformed, not allowed); logged
	Held      int // messages waiting for a roster statement or inventory (§8.3)
	Destroyed int // messages made redundant by a newer one, destroyed (§10.7)
	Healed    int // records and statements published again because the hub lacked them (§12.2)
	Declined  int // join requests on an invite that no longer admits (used up, expired, closed), answered with a decline
	// Refused counts this device's own edits the group newly refused
	// (Device.Refused lists them); Excluded, other members' writes that
	// left this device's lists because the current epoch does not accept
	// them (§11.6): a value or a delete shown before may be gone.
	Refused, Excluded int
}

// Sync publishes what this device wrote and merges what the hub holds
// (§10.1). It dials the hub if no connection is open. An unreachable hub
// gives an error with CodeOffline (the device keeps working and Status
// says offline); a refused credential, CodeAuth with the §13.3 message;
// local data is untouched either way.
func (d *Device) Sync(ctx context.Context) (SyncReport, error) {
	eng, err := d.engine()
	if err != nil {
		return SyncReport{}, err
	}
	s, err := d.connect(ctx)
	if err != nil {
		return SyncReport{}, d.failed(err)
	}
	rep, err := eng.SyncWith(ctx, s)
	out := SyncReport{}
	if rep != nil {
		out = SyncReport{Published: rep.Published, Fetched: rep.Fetched, Applied: rep.Applied, Rejected: len(rep.Rejected), Held: rep.Held, Destroyed: rep.Destroyed, Healed: rep.Healed, Declined: rep.Declined,
			Refused: rep.Refused, Excluded: rep.Excluded}
	}
	if out.Applied > 0 || out.Published > 0 || out.Refused > 0 || out.Excluded > 0 {
		d.notify()
	}
	if err != nil {
		return out, d.failed(err)
	}
	now := time.Now()
	d.mu.Lock()
	d.status = syncStatus{lastSync: now, rejected: d.status.rejected + out.Rejected, watching: d.status.watching, healed: d.status.healed + out.Healed}
	d.mu.Unlock()
	d.db.SetMeta(ctx, map[string][]byte{devstore.KeyLastSync: binary.BigEndian.AppendUint64(nil, uint64(now.UnixMilli()))})
	return out, nil
}

// connect returns the open hub connection, dialing it if needed.
func (d *Device) connect(ctx context.Context) (hub.Store, error) {
	d.mu.Lock()
	s, h := d.store, d.hub
	d.mu.Unlock()
	if s != nil {
		return s, nil
	}
	var err error
	switch {
	case d.opts.Store != nil:
		s, err = d.opts.Store(ctx)
	case h.IsZero():
		return nil, newErr(CodeNoHub, nil, "no sync hub is connected yet: connect one first")
	default:
		s, err = h.open(ctx, d.budget, d.opts.RootCAs)
	}
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		s.Close()
		return nil, newErr(CodeInvalid, nil, "the device is closed")
	}
	if d.store != nil { // another Sync connected meanwhile
		s.Close()
		return d.store, nil
	}
	d.store = s
	return s, nil
}

// failed classifies a sync error, records it in the status, and drops a
// broken connection so the next Sync dials again.
func (d *Device) failed(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, hub.ErrAuth):
		e = newErr(CodeAuth, err, msgAuth)
	case errors.Is(err, client.ErrBroken):
		e = newErr(CodeStorage, err, "the device's disk failed while syncing: close and reopen it")
	case offline(err):
		e = newErr(CodeOffline, err, msgOffline)
	default:
		e = newErr(CodeOffline, err, "the sync hub gave an answer Ferry can't use; it will try again")
	}
	d.mu.Lock()
	d.status.offline = e.Code == CodeOffline
	d.status.lastErr = e
	if d.store != nil && e.Code != CodeNoHub {
		d.store.Close()
		d.store = nil
	}
	d.mu.Unlock()
	return e
}

// offline reports whether err means the hub could not be reached or the
// connection broke: a network error, a deadline, or a closed store.
func offline(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, hub.ErrClosed) ||
		errors.Is(err, hub.ErrUnavailable) || errors.Is(err, net.ErrClosed)
}

// Status is what an app shows in its sync indicator (§13.2, §13.3).
type Status struct {
	Offline  bool      // the last attempt could not reach the hub
	Online   bool      // Run is connected and watching the hub
	LastSync time.Time // the last complete sync; zero if never
	Pending  int       // edits made here and not yet on the hub
	Waiting  int       // messages waiting for a roster statement or inventory (§8.3)
	Healed   int       // records and statements published again since the device was opened (§12.2)
	Rejected int       // messages refused since the device was opened (logged)
	Refused  int       // this device's own edits the group would not accept, kept aside (Device.Refused)
	Err      error     // the last attempt's error (*Error), nil after a success
	// Received and Receiving are the running sync's progress reading the
	// hub: messages read so far, of those it has to read (0 of 0 when no
	// sync runs). A first sync of a large collection reads thousands.
	Received, Receiving int
}

// Status returns the device's sync status.
func (d *Device) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	got, of := d.eng.Fetching()
	return Status{Offline: d.status.offline, Online: d.status.watching && !d.status.offline, LastSync: d.status.lastSync,
		Pending: d.eng.Pending(), Refused: d.eng.RefusedCount(), Waiting: d.eng.Held(), Healed: d.status.healed, Rejected: d.status.rejected, Err: d.status.lastErr,
		Received: got, Receiving: of}
}

// CollectionState says how the device follows a collection (§9.4).
type CollectionState string

// Collection states.
const (
	StateFollowing CollectionState = "following" // in sync with its roster
	StateWaiting   CollectionState = "waiting"   // its roster has not arrived yet
	StateDead      CollectionState = "dead"      // two conflicting roster histories: read-only, copy it (§11.8)
	StateDeleted   CollectionState = "deleted"   // its owner deleted it (§11.9)
	StateStalled   CollectionState = "stalled"   // its owner's next roster statement is invalid
	StateRemoved   CollectionState = "removed"   // the owner removed this user: read-only (§13.2)
)

// CollectionState returns how the device follows collection c.
func (d *Device) CollectionState(c CollectionID) (CollectionState, error) {
	eng, err := d.engine()
	if err != nil {
		return "", err
	}
	s, err := eng.Standing(client.CollectionID(c), [32]byte(d.UserID()))
	if err != nil {
		return "", noCollection(err)
	}
	switch {
	case s.Status == client.StatusFollowing && s.Deleted:
		return StateDeleted, nil
	case s.Status == client.StatusFollowing && s.Removed:
		return StateRemoved, nil
	case s.Status == client.StatusFollowing:
		return StateFollowing, nil
	case s.Status == client.StatusWaiting:
		return StateWaiting, nil
	case s.Status == client.StatusStalled:
		return StateStalled, nil
	}
	return StateDead, nil
}

// Changed returns a channel that is closed at the next change of the
// device's data: a local edit, or writes merged by Sync. Call it again
// after each change to wait for the next one.
func (d *Device) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// notify wakes whoever waits on Changed.
func (d *Device) notify() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.changed)
	d.changed = make(chan struct{})
}

// notifyLocal wakes Changed and Run after a local edit.
func (d *Device) notifyLocal() {
	d.notify()
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.local)
	d.local = make(chan struct{})
}
