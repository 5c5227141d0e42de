package client

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// DefaultMaxHeld is the default limit on messages held in memory while
// they wait for a roster statement (§8.3, §9.4).
const DefaultMaxHeld = 4096

// DefaultFetchBatch is how many messages one Fetch call asks for.
const DefaultFetchBatch = 256

// CollectionID is a collection's ID: the first 16 bytes of its genesis
// statement's ID (§7.1).
type CollectionID [16]byte

// String returns the ID as b32 (§5.2), as it appears in a membership
// record's name (§6.2).
func (c CollectionID) String() string { return suite.B32(c[:]) }

// Config says how to make a Device.
type Config struct {
	// Secret is the user secret US (§5.3). Every device of the user holds it.
	Secret [32]byte
	// Hub is the store this device syncs with (§10.1). All of the user's
	// devices use the same hub, each through its own Store.
	Hub hub.Store
	// Name is what the user calls themselves in collections created on this
	// device (§8.1).
	Name string
	// Rand supplies the device ID, record IDs, epoch keys and envelope
	// salts; nil means crypto/rand.
	Rand io.Reader
	// Now is the wall clock of the HLC (§9.1); nil means time.Now.
	Now func() time.Time
	// Logger receives a warning for each rejected message; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxHeld bounds the messages held for a missing dependency;
	// zero means DefaultMaxHeld.
	MaxHeld int
	// FetchBatch is the number of messages per Fetch; zero means
	// DefaultFetchBatch.
	FetchBatch int
	// MaxHeldBytes, MaxHeldPerCollection and MaxHeldBytesPerCollection
	// bound the messages held for a missing dependency in bytes over the
	// device, and in number and bytes per collection; MaxFragmentBytes and
	// MaxFragmentBytesPerCollection bound inventory fragments held before
	// assembly; FetchBatchBytes bounds the bytes of one Fetch. Zero means
	// the Default of the same name (bounds.go). A message refused for a
	// bound is remembered and not downloaded again until the bound frees.
	MaxHeldBytes                  int
	MaxHeldPerCollection          int
	MaxHeldBytesPerCollection     int
	MaxFragmentBytes              int
	MaxFragmentBytesPerCollection int
	FetchBatchBytes               int
	// DeviceID, when set, is this installation's device ID, kept from an
	// earlier run (§5.3); nil picks a new random one.
	DeviceID *suite.DeviceID
	// HLC is the clock's last value from an earlier run: new writes are
	// always later (§9.1), whatever the wall clock says.
	HLC suite.HLC
	// Journal persists every change; nil keeps the device in memory.
	Journal Journal
	// ReadOnlyFor is how long a removed user's replica and a deleted
	// collection stay readable (§11.6, §11.9); zero means
	// DefaultReadOnlyFor.
	ReadOnlyFor time.Duration
	// HoldFor is how long a message waiting for a missing roster statement
	// or inventory is kept (§9.4 holding limits); zero means
	// DefaultHoldFor. After that it is evicted locally and read from the
	// hub again later; its hub message is never destroyed for it.
	HoldFor time.Duration
}

// DefaultHoldFor is the §9.4 default holding limit.
const DefaultHoldFor = 30 * 24 * time.Hour

// Device is one installation of one user (§5.3, §6): the identity derived
// from the user secret, a device ID of its own, an HLC, the merged state of
// home and of every collection it follows (§12.1), and its position in the
// hub's change feed. Writes are local and instant; Sync publishes them and
// merges what other devices published. A Device is safe for concurrent use.
//
// The state lives in memory: persisting it is the caller's concern and
// outside this package.
type Device struct {
	id          *suite.Identity
	dev         suite.DeviceID
	clock       *record.Clock
	store       hub.Store
	journal     Journal
	rand        io.Reader
	log         *slog.Logger
	name        string
	bounds      bounds
	holdFor     time.Duration
	readOnlyFor time.Duration

	syncMu sync.Mutex // one Sync at a time

	fetching, fetched atomic.Int64 // the running pull's messages to read and read so far

	mu          sync.Mutex // guards everything below
	home        *record.State
	colls       map[CollectionID]*collection
	chans       map[string]*channel
	cursor      hub.Cursor
	ensured     bool
	msgs        map[hub.ID]*msgInfo
	order       []hub.ID
	byHash      map[[32]byte]hub.ID // fetched or published messages in the folder, by H(envelope)
	held        []*heldMsg
	outbox      []outMsg
	queuedRecs  map[queuedRec]int // dirty outbox entries by channel and record (collection.go)
	outSeq      uint64
	share       *shares                     // sharing messages waiting to be judged (share.go)
	answers     *answerLimiter              // automatic answers sent (answers.go)
	rotations   map[CollectionID]*rotation  // key changes in progress (rotate.go)
	hook        func(point string)          // crash tests: called at each rotation step boundary
	keyWait     map[CollectionID]time.Time  // since when each collection's current key has been missing (keyreq.go)
	finishing   map[CollectionID]flightNote // another device's changes this one was asked to finish (§11.7)
	epochSeen   map[CollectionID][32]byte   // the epoch each collection was last published in (resign.go)
	delta       Delta                       // changes not yet given to the journal
	staged      []Delta                     // what Sync merged, not yet given to the journal (stageSynced)
	stagedItems int
	stagedBytes int   // message bytes in staged (stagedSize)
	broken      error // a journal commit failed after memory changed
	damaged     int   // stored writes found damaged on restore (persist.go)
	now         func() time.Time
}

// channel is a channel this device follows: home, or one epoch of a
// collection (§5.6).
type channel struct {
	tag   string
	key   [32]byte
	coll  *collection // nil for home, the inbox and invites
	epoch [32]byte
	role  chanRole
	inv   *invite // of an invite channel
}

// chanRole says what a followed channel is (§5.6).
type chanRole uint8

const (
	roleData   chanRole = iota // home, or an epoch of a collection
	roleInbox                  // the user's inbox: kind-2 grants and declines (§11.4)
	roleInvite                 // an invite the user made: kind-3 join requests (§11.2)
)

type msgInfo struct {
	channel string
	done    bool
	state   MsgState
	hash    [32]byte
	kind    msgKind
	rec     [16]byte   // the record of a record-state message
	writes  [][32]byte // the IDs of its writes (§10.7 domination, §12.2 healing)
	size    int64      // the size Changes reported, or the envelope's once fetched
	// Of a message refused for a holding bound (MsgRefused, bounds.go):
	firstSeen time.Time // when it was first downloaded (§9.4)
	level     int       // the usage that refused it (refusalLevel)
}

// msgKind says what a fetched kind-1 message holds.
type msgKind uint8

const (
	kindUnknown  msgKind = iota // not fetched, or not a kind-1 payload
	kindRecord                  // a data or home record's writes
	kindRoster                  // roster statements: never pruned (§10.7)
	kindFragment                // an inventory fragment: never dominated (§10.7)
)

// outMsg is one entry of the outbox: a sealed envelope (roster statements,
// published as they were signed), or a dirty record, published at push time
// as a message holding the record's current kept writes (§10.5, §10.7).
type outMsg struct {
	seq      uint64
	channel  string
	envelope []byte   // nil for a dirty record
	rec      [16]byte // the dirty record
	dirty    bool
	kind     msgKind    // of an envelope: what it holds
	ids      [][32]byte // of an envelope: the IDs of its writes or statements
	auto     bool       // an automatic answer: pushed after the device's own messages (answers.go)
}

// heldMsg is a data message held for a missing dependency (§8.3), with
// its writes already verified (verifyData).
type heldMsg struct {
	id   hub.ID
	ch   *channel
	hash [32]byte
	env  []byte
	seen time.Time
	data []*record.Verified
}

// collection is one collection the device follows.
type collection struct {
	id      CollectionID
	chain   *roster.Chain
	state   *record.State
	epochs  map[[32]byte][32]byte // epoch ID → key, from home (§6.2)
	checked map[[32]byte]bool     // epochs whose key matched its commitment (§5.7)
	// refused holds the user's own writes the group would not accept,
	// kept aside for the app (refused.go); settled is the roster head the
	// state was last judged under, settledFull whether with the current
	// epoch's inventory.
	refused     map[[32]byte]Refused
	settled     [32]byte
	settledFull bool
}

// New makes a device of the user whose secret is cfg.Secret, with a new
// random device ID (§5.3): on a second device, and on one restored from the
// backup key, this is all it takes to be the user (§6.3 "Restoring"); it
// then finds the user's collections in home when it syncs (§6.2).
func New(cfg Config) (*Device, error) {
	d := &Device{
		id:      suite.NewIdentity(cfg.Secret),
		store:   cfg.Hub,
		journal: cfg.Journal,
		now:     cfg.Now,
		byHash:  map[[32]byte]hub.ID{},
		rand:    cfg.Rand,
		log:     cfg.Logger,
		name:    cfg.Name,
		bounds:  newBounds(&cfg),
		colls:   map[CollectionID]*collection{},
		chans:   map[string]*channel{},
		msgs:    map[hub.ID]*msgInfo{},
	}
	if d.rand == nil {
		d.rand = rand.Reader
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.readOnlyFor = cfg.ReadOnlyFor
	if d.readOnlyFor <= 0 {
		d.readOnlyFor = DefaultReadOnlyFor
	}
	d.holdFor = cfg.HoldFor
	if d.holdFor <= 0 {
		d.holdFor = DefaultHoldFor
	}
	if d.now == nil {
		d.now = time.Now
	}
	if cfg.DeviceID != nil {
		d.dev = *cfg.DeviceID
	} else if _, err := io.ReadFull(d.rand, d.dev[:]); err != nil {
		return nil, fmt.Errorf("tandem/client: device ID: %w", err)
	}
	d.clock = record.NewClock(cfg.HLC, cfg.Now)
	// Home is one epoch (counter 0) with the home scope; every home record
	// is named (§6.2, §7.3).
	d.home = record.NewState(record.NewValidator(record.Rules{Scope: d.id.HomeScope, Home: true}))
	d.chans[d.id.HomeTag] = &channel{tag: d.id.HomeTag, key: d.id.HomeKey}
	d.chans[d.id.InboxTag] = &channel{tag: d.id.InboxTag, role: roleInbox}
	d.share = newShares()
	d.answers = newAnswerLimiter()
	d.rotations = map[CollectionID]*rotation{}
	d.finishing = map[CollectionID]flightNote{}
	d.keyWait = map[CollectionID]time.Time{}
	d.epochSeen = map[CollectionID][32]byte{}
	return d, nil
}

// NewSecret returns a fresh random user secret US (§6.1) read from r
// (crypto/rand when nil).
func NewSecret(r io.Reader) ([32]byte, error) {
	if r == nil {
		r = rand.Reader
	}
	var us [32]byte
	_, err := io.ReadFull(r, us[:])
	return us, err
}

// UID returns the user ID: the public signing key (§5.3).
func (d *Device) UID() [32]byte { return d.id.UID }

// DeviceID returns this installation's device ID (§5.3).
func (d *Device) DeviceID() suite.DeviceID { return d.dev }

// Collections returns the IDs of the collections the device follows,
// sorted by bytes.
func (d *Device) Collections() []CollectionID {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]CollectionID, 0, len(d.colls))
	for id := range d.colls {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b CollectionID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// Status reports how the device follows the collection's roster (§9.4).
func (d *Device) Status(c CollectionID) (roster.Status, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	return coll.chain.Status(), nil
}

// Snapshot returns a copy of the collection's merged state (§9.3), to read
// with the record.State accessors (Records, Values, Members, Deleted).
func (d *Device) Snapshot(c CollectionID) (*record.State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	return coll.state.Clone(), nil
}

// HomeSnapshot returns a copy of the merged state of home (§6.2).
func (d *Device) HomeSnapshot() *record.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.home.Clone()
}

// Channels returns the tags of the channels the device follows: home and
// every known epoch of its collections (§5.6), sorted.
func (d *Device) Channels() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.chans))
	for tag := range d.chans {
		out = append(out, tag)
	}
	slices.Sort(out)
	return out
}

// Fetching returns how many messages the running Sync has read and has to
// read (0, 0 when none runs): the progress of a first sync.
func (d *Device) Fetching() (fetched, total int) {
	return int(d.fetched.Load()), int(d.fetching.Load())
}

// Held returns the number of messages held for a missing dependency.
func (d *Device) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}

// Pending returns the number of messages written locally and not yet
// published.
func (d *Device) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.outbox)
}

// follow starts following one epoch channel of coll, with its key.
// d.mu is held.
func (d *Device) follow(coll *collection, epoch, key [32]byte) *channel {
	tag := suite.CollectionTag(key, epoch)
	if ch, ok := d.chans[tag]; ok {
		if ch.coll != nil {
			ch.coll.epochs[epoch] = key
		}
		return ch
	}
	coll.epochs[epoch] = key
	ch := &channel{tag: tag, key: key, coll: coll, epoch: epoch}
	d.chans[tag] = ch
	return ch
}

func newCollection(id CollectionID, opts roster.Options) *collection {
	return &collection{
		id:      id,
		chain:   roster.NewChain([16]byte(id), opts),
		state:   record.NewState(record.NewValidator(record.Rules{Scope: id})),
		epochs:  map[[32]byte][32]byte{},
		checked: map[[32]byte]bool{},
		refused: map[[32]byte]Refused{},
	}
}

// seal encodes p and seals it as a kind-1 envelope for ch (§5.4, §10.5).
func (d *Device) seal(ch *channel, p *RecordPayload) (outMsg, error) {
	pt, err := EncodeRecordPayload(p)
	if err != nil {
		return outMsg{}, err
	}
	if roster.MessageSize(len(pt)) >= hub.MaxMessage {
		return outMsg{}, fmt.Errorf("%w: %d-byte payload", ErrTooLarge, len(pt))
	}
	env, err := suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, d.rand)
	if err != nil {
		return outMsg{}, err
	}
	return outMsg{channel: ch.tag, envelope: env}, nil
}

func signedWrites(ws ...*record.Write) []SignedWrite {
	out := make([]SignedWrite, len(ws))
	for i, w := range ws {
		out[i] = SignedWrite{Body: w.Body(), Sig: w.Sig()}
	}
	return out
}
