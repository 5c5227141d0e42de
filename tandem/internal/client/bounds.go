package client

import (
	"fmt"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// Byte and count bounds on what a hub participant can make a device hold
// and download (§8.3 holding, §9.4 holding limits, §10.6 sizes). Each is a
// Config field; zero means the default here. The figures are in
// docs/decisions/tandem-client-bounds.md.
const (
	// DefaultMaxHeldBytes bounds the envelope bytes of messages held for a
	// missing roster statement, over the whole device.
	DefaultMaxHeldBytes = 32 << 20
	// DefaultMaxHeldPerCollection and DefaultMaxHeldBytesPerCollection
	// bound the messages held for one collection, in number and in bytes.
	DefaultMaxHeldPerCollection      = 1024
	DefaultMaxHeldBytesPerCollection = 8 << 20
	// DefaultMaxFragmentBytes bounds the inventory fragments held before
	// assembly over the whole device; DefaultMaxFragmentBytesPerCollection
	// for one collection (the roster chain's own limit).
	DefaultMaxFragmentBytes              = 32 << 20
	DefaultMaxFragmentBytesPerCollection = 8 << 20
	// DefaultFetchBatchBytes bounds the bytes one Fetch call downloads, as
	// the sizes Changes reports add up (one message over it is fetched
	// alone; one over hub.MaxMessage is never fetched).
	DefaultFetchBatchBytes = 4 << 20
)

// bounds are a device's holding and fetch limits, defaults filled in.
type bounds struct {
	heldN, heldBytes         int   // per device
	collHeldN, collHeldBytes int   // per collection
	fragBytes, collFragBytes int   // inventory fragments, per device and per collection
	batchN                   int   // messages per Fetch
	batchBytes               int64 // bytes per Fetch
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func newBounds(cfg *Config) bounds {
	return bounds{
		heldN:         or(cfg.MaxHeld, DefaultMaxHeld),
		heldBytes:     or(cfg.MaxHeldBytes, DefaultMaxHeldBytes),
		collHeldN:     or(cfg.MaxHeldPerCollection, DefaultMaxHeldPerCollection),
		collHeldBytes: or(cfg.MaxHeldBytesPerCollection, DefaultMaxHeldBytesPerCollection),
		fragBytes:     or(cfg.MaxFragmentBytes, DefaultMaxFragmentBytes),
		collFragBytes: or(cfg.MaxFragmentBytesPerCollection, DefaultMaxFragmentBytesPerCollection),
		batchN:        or(cfg.FetchBatch, DefaultFetchBatch),
		batchBytes:    int64(or(cfg.FetchBatchBytes, DefaultFetchBatchBytes)),
	}
}

// chainOptions are the roster chain options of a new collection.
func (b bounds) chainOptions() roster.Options {
	return roster.Options{Limits: roster.Limits{MaxFragmentBytes: b.collFragBytes}}
}

// heldUsage returns what is held now for collection c and for the device.
// d.mu is held.
func (d *Device) heldUsage(c *collection) (collN, collBytes, devN, devBytes int) {
	for _, h := range d.held {
		if h.ch.coll == c {
			collN++
			collBytes += len(h.env)
		}
		devN++
		devBytes += len(h.env)
	}
	return
}

// heldRoom reports whether a message of size bytes may be held for c.
// d.mu is held.
func (d *Device) heldRoom(c *collection, size int) bool {
	collN, collBytes, devN, devBytes := d.heldUsage(c)
	b := d.bounds
	return collN < b.collHeldN && devN < b.heldN &&
		collBytes+size <= b.collHeldBytes && devBytes+size <= b.heldBytes
}

// fragmentBytes returns the inventory fragment bytes held over the device.
// d.mu is held.
func (d *Device) fragmentBytes() int {
	n := 0
	for _, c := range d.colls {
		n += c.chain.FragmentBytes()
	}
	return n
}

// refuse remembers message id, refused for a holding bound: it is not
// downloaded again until mayRetry says the bound freed. Its size and first
// sighting are kept, so that §9.4's holding limit counts from when it was
// first seen, not from a later download. d.mu is held.
func (d *Device) refuse(id hub.ID, c *collection, kind msgKind, size int, seen time.Time) {
	m := d.msgs[id]
	if m == nil {
		return
	}
	m.kind, m.size = kind, int64(size)
	if m.firstSeen.IsZero() {
		m.firstSeen = seen
	}
	m.level = d.refusalLevel(m, c)
	d.mark(id, MsgRefused)
}

// refusalLevel is the usage that kept m out: the device's fragment bytes
// for a fragment, the collection's statement count for a message past the
// holding limit. d.mu is held.
func (d *Device) refusalLevel(m *msgInfo, c *collection) int {
	switch {
	case c == nil:
		return 0
	case m.kind == kindFragment:
		return d.fragmentBytes()
	case d.pastHolding(m):
		return len(c.chain.Statements())
	}
	return 0
}

func (d *Device) pastHolding(m *msgInfo) bool {
	return !m.firstSeen.IsZero() && d.now().Sub(m.firstSeen) >= d.holdFor
}

// mayRetry reports whether a refused message may be downloaded again: the
// bound that refused it has room for it now. A fragment is tried again once
// the fragments held shrank (an assembly or expiry freed some); a message
// past the holding limit once its collection gained a roster statement (the
// only thing that can complete it); any other once held messages leave room
// for its size. d.mu is held.
func (d *Device) mayRetry(m *msgInfo) bool {
	ch := d.chans[m.channel]
	if ch == nil || ch.coll == nil {
		return false
	}
	c := ch.coll
	switch {
	case m.kind == kindFragment:
		used := d.fragmentBytes()
		return used == 0 || used < m.level
	case d.pastHolding(m):
		return len(c.chain.Statements()) > m.level
	}
	return d.heldRoom(c, int(m.size))
}

// fetchItem is a message to download, with the size Changes reported.
type fetchItem struct {
	id   hub.ID
	size int64
}

// nextBatch returns how many of todo's first items one Fetch downloads:
// at most batchN, and no more bytes than batchBytes, but always one.
func (b bounds) nextBatch(todo []fetchItem) int {
	var sum int64
	for i, it := range todo {
		if i == b.batchN || (i > 0 && sum+it.size > b.batchBytes) {
			return i
		}
		sum += it.size
	}
	return len(todo)
}

// tooLarge reports whether the hub said a message is over the message limit
// (§10.6): such a message is ignored without being downloaded.
func tooLarge(size int64) bool { return size >= hub.MaxMessage }

// fragmentRoom checks the device-wide bound on inventory fragments before
// c's chain is given one of n bytes (the chain applies the per-collection
// bound). A collection holding no fragment may always take one, so a flood
// in other collections never starves it completely. d.mu is held.
func (d *Device) fragmentRoom(c *collection, n int) error {
	if c.chain.FragmentBytes() > 0 && d.fragmentBytes()+n > d.bounds.fragBytes {
		return fmt.Errorf("%w: %w: %d of %d fragment bytes held on this device", errLater, roster.ErrLimit, d.fragmentBytes(), d.bounds.fragBytes)
	}
	return nil
}
