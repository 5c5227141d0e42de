package roster

import (
	"bytes"
	"fmt"
	"slices"
	"time"
)

// Origin says where a statement was read (§9.4, §11.6).
type Origin struct {
	// Channel is the epoch ID of the collection channel the statement was
	// read in. Zero means out of band: the roster sent with a grant or in a
	// roster reply (§11.4), or the owner's own journal after announcing.
	// A statement read only in the channel its own ID starts is a draft
	// (§11.6): not part of the roster, not a successor, and not one half
	// of a conflict, until it is announced.
	Channel [32]byte
}

// Conflict is the proof that a collection is dead (§9.4): two different
// owner-signed successors of one statement. They are kept for good.
type Conflict struct {
	Parent [32]byte
	A, B   *Statement
}

// Status summarizes a Chain.
type Status int

// Chain statuses.
const (
	// StatusWaiting: the genesis is not known yet; everything is held.
	StatusWaiting Status = iota
	// StatusFollowing: the roster is being followed.
	StatusFollowing
	// StatusStalled: the head's one owner-signed successor is invalid.
	// The roster stays at the head; a second successor would kill it.
	StatusStalled
	// StatusInvalidGenesis: the statement whose ID gives this collection
	// ID is not a valid genesis; nothing in the collection is valid.
	StatusInvalidGenesis
	// StatusDead: two owner-signed successors of one statement (§9.4).
	StatusDead
)

var statusNames = [...]string{"waiting", "following", "stalled", "invalid-genesis", "dead"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

type node struct {
	st        *Statement
	announced bool // read outside its own channel, or announced by a grant
	counting  bool // announced, or has a counting descendant: a successor (§9.4)
	seen      time.Time
}

// Chain follows one collection's roster (§9.4): it keeps every statement
// the owner signed, holds out-of-order statements until their parents
// arrive, follows the one successor of each statement, and declares the
// collection dead on any two owner-signed successors of one statement. It
// also assembles and verifies epoch inventories (§8.3) and judges data
// writes (CheckWrite). Its state depends only on the set of statements,
// announcements and fragments it was given, not on their order (except
// which pair is reported as the Conflict, and what Expire evicted).
//
// A Chain is not safe for concurrent use; its owner serializes calls.
type Chain struct {
	collection [16]byte
	limits     Limits
	now        func() time.Time

	genesis    *Statement
	genesisErr error
	owner      [32]byte

	nodes      map[[32]byte]*node
	children   map[[32]byte][][32]byte // parent → counting successors, in arrival order
	kids       map[[32]byte][][32]byte // parent → every kept statement naming it
	preGenesis map[[32]byte]*node      // before the genesis: signer not yet judged
	announce   map[[32]byte]bool       // Announce calls, possibly before the statement

	dead      *Conflict
	roster    *Roster // internal, grown in place
	snapshot  *Roster // immutable copy handed out; nil when stale
	stalledBy *Statement
	stallErr  error

	frags   *fragmentStore
	invErrs map[[32]byte]error
}

// NewChain returns a Chain for the collection with ID collection (§7.1).
func NewChain(collection [16]byte, opts Options) *Chain {
	c := &Chain{
		collection: collection,
		limits:     opts.Limits.withDefaults(),
		now:        opts.Now,
		nodes:      map[[32]byte]*node{},
		children:   map[[32]byte][][32]byte{},
		kids:       map[[32]byte][][32]byte{},
		preGenesis: map[[32]byte]*node{},
		announce:   map[[32]byte]bool{},
		invErrs:    map[[32]byte]error{},
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.frags = newFragmentStore(c.limits)
	return c
}

// Collection is the collection ID the chain follows.
func (c *Chain) Collection() [16]byte { return c.collection }

// Add gives the chain a statement read from origin. It returns nil when the
// statement is kept (followed, held for its parent, held as a draft, or kept
// as an owner-signed invalid statement); Status and Roster tell the
// outcome. It returns an error wrapping ErrRejected when the statement is
// not the owner's (signatures by any other key do not count, §9.4) or not a
// _roster write, or was not made by NewStatement (ErrUnverified), and ErrLimit when a holding limit is reached; nothing is
// stored then.
func (c *Chain) Add(st *Statement, from Origin) error {
	if !st.Verified() {
		return fmt.Errorf("%w: %w", ErrRejected, ErrUnverified)
	}
	if c.genesis == nil {
		if CollectionID(st.ID()) == c.collection {
			c.setGenesis(st)
			return nil
		}
		if n, ok := c.preGenesis[st.ID()]; ok {
			n.announced = n.announced || from.Channel != st.ID()
			return nil
		}
		if len(c.preGenesis) >= c.limits.MaxHeldStatements {
			return fmt.Errorf("%w: %d statements held before the genesis", ErrLimit, len(c.preGenesis))
		}
		c.preGenesis[st.ID()] = &node{st: st, seen: c.now(), announced: from.Channel != st.ID()}
		return nil
	}
	if st.ID() == c.genesis.ID() {
		return nil
	}
	return c.admit(st, from, c.now())
}

// Announce records that statement id has been announced (§11.6), as a
// verified grant naming it or a later statement proves. A draft becomes a
// successor; a statement not yet received is treated as announced when it
// arrives.
func (c *Chain) Announce(id [32]byte) {
	c.announce[id] = true
	if n, ok := c.nodes[id]; ok && !n.announced {
		n.announced = true
		c.markCounting(n)
		c.advance()
	}
}

func (c *Chain) setGenesis(g *Statement) {
	c.genesis = g
	c.owner = g.Body().Author
	c.genesisErr = ValidateGenesis(g)
	gn := &node{st: g, announced: true, counting: true, seen: c.now()}
	c.nodes[g.ID()] = gn
	if c.genesisErr == nil {
		c.roster, _ = NewRoster(g) // cannot fail: validated above
	}
	pending := make([]*node, 0, len(c.preGenesis))
	for _, n := range c.preGenesis {
		pending = append(pending, n)
	}
	slices.SortFunc(pending, func(a, b *node) int { return bytes.Compare(a.st.id[:], b.st.id[:]) })
	c.preGenesis = map[[32]byte]*node{}
	for _, n := range pending {
		from := Origin{Channel: n.st.ID()} // a draft, unless read elsewhere too
		if n.announced {
			from = Origin{}
		}
		_ = c.admit(n.st, from, n.seen) // non-owner statements are dropped here
	}
	c.advance()
}

func (c *Chain) admit(st *Statement, from Origin, seen time.Time) error {
	switch {
	case st.Body().Author != c.owner:
		return fmt.Errorf("%w: %w: %x", ErrRejected, ErrAuthor, st.Body().Author)
	case !st.isRosterWrite():
		return fmt.Errorf("%w: %w", ErrRejected, ErrNotRosterWrite)
	case st.Body().Ref == [32]byte{}:
		return fmt.Errorf("%w: %w: another genesis", ErrRejected, ErrRef)
	}
	announced := from.Channel != st.ID() || c.announce[st.ID()]
	if n, ok := c.nodes[st.ID()]; ok {
		if announced && !n.announced {
			n.announced = true
			c.markCounting(n)
			c.advance()
		}
		return nil
	}
	if _, ok := c.nodes[st.Body().Ref]; !ok && c.heldCount() >= c.limits.MaxHeldStatements {
		return fmt.Errorf("%w: %d statements held", ErrLimit, c.heldCount())
	}
	n := &node{st: st, announced: announced, seen: seen}
	c.nodes[st.ID()] = n
	c.kids[st.Parent()] = append(c.kids[st.Parent()], st.ID())
	if announced || c.hasCountingKid(st.ID()) {
		c.markCounting(n)
	}
	c.advance()
	return nil
}

// markCounting makes n and every ancestor a counting successor: a statement
// the owner built on was announced (§11.6). Two counting successors of one
// statement kill the collection (§9.4).
func (c *Chain) markCounting(n *node) {
	for x := n; x != nil && !x.counting; x = c.nodes[x.st.Parent()] {
		x.counting = true
		p := x.st.Parent()
		c.children[p] = append(c.children[p], x.st.ID())
		if kids := c.children[p]; len(kids) >= 2 && c.dead == nil {
			c.dead = &Conflict{Parent: p, A: c.nodes[kids[0]].st, B: c.nodes[kids[1]].st}
		}
	}
}

// hasCountingKid reports whether a statement built on id already counts:
// then id was announced too, though it arrived after its child.
func (c *Chain) hasCountingKid(id [32]byte) bool {
	for _, k := range c.kids[id] {
		if c.nodes[k].counting {
			return true
		}
	}
	return false
}

// advance follows the roster from its head while the head has exactly one
// successor and that successor is valid (§9.4).
func (c *Chain) advance() {
	for c.roster != nil && c.dead == nil && c.stalledBy == nil {
		kids := c.children[c.roster.Head().ID()]
		if len(kids) != 1 {
			return
		}
		next := c.nodes[kids[0]].st
		if err := c.roster.Validate(next); err != nil {
			c.stalledBy, c.stallErr = next, err
			c.snapshot = nil
			return
		}
		c.roster.push(next)
		c.snapshot = nil
		c.tryAssemble(next.ID())
	}
}

// heldCount counts statements whose parent is unknown.
func (c *Chain) heldCount() int {
	n := 0
	for _, x := range c.nodes {
		if _, ok := c.nodes[x.st.Parent()]; !ok && x.st != c.genesis {
			n++
		}
	}
	return n
}

// Status reports the chain's state.
func (c *Chain) Status() Status {
	switch {
	case c.dead != nil:
		return StatusDead
	case c.genesis == nil:
		return StatusWaiting
	case c.genesisErr != nil:
		return StatusInvalidGenesis
	case c.stalledBy != nil:
		return StatusStalled
	}
	return StatusFollowing
}

// Dead returns the conflict that killed the collection, if any (§9.4).
func (c *Chain) Dead() (*Conflict, bool) { return c.dead, c.dead != nil }

// Stalled returns the head's owner-signed successor that is invalid, and
// why, if there is one.
func (c *Chain) Stalled() (*Statement, error) { return c.stalledBy, c.stallErr }

// GenesisError is why the genesis is invalid, or nil.
func (c *Chain) GenesisError() error { return c.genesisErr }

// Roster returns the followed roster, or false while no valid genesis is
// known. The result is immutable.
func (c *Chain) Roster() (*Roster, bool) {
	if c.roster == nil {
		return nil, false
	}
	if c.snapshot == nil {
		c.snapshot = c.roster.clone()
	}
	return c.snapshot, true
}

// Statements returns every statement the chain keeps, sorted by ID.
func (c *Chain) Statements() []*Statement {
	out := make([]*Statement, 0, len(c.nodes)+len(c.preGenesis))
	for _, n := range c.nodes {
		out = append(out, n.st)
	}
	for _, n := range c.preGenesis {
		out = append(out, n.st)
	}
	slices.SortFunc(out, func(a, b *Statement) int { return bytes.Compare(a.id[:], b.id[:]) })
	return out
}

// connected reports whether id's ancestry reaches the genesis.
func (c *Chain) connected(id [32]byte, memo map[[32]byte]bool) bool {
	var path [][32]byte
	ok := false
	for {
		if v, seen := memo[id]; seen {
			ok = v
			break
		}
		if c.genesis != nil && id == c.genesis.ID() {
			ok = true
			break
		}
		n, known := c.nodes[id]
		if !known {
			break
		}
		path = append(path, id)
		id = n.st.Parent()
	}
	for _, p := range path {
		memo[p] = ok
	}
	return ok
}

// Expire evicts, locally, held items older than Limits.HoldFor: statements
// not connected to the genesis and inventory fragments not yet assembled
// (§9.4). It never evicts the two statements of a Conflict. It returns how
// many statements and fragments it evicted.
func (c *Chain) Expire() (statements, fragments int) {
	cutoff := c.now().Add(-c.limits.HoldFor)
	for id, n := range c.preGenesis {
		if n.seen.Before(cutoff) {
			delete(c.preGenesis, id)
			statements++
		}
	}
	memo := map[[32]byte]bool{}
	for id, n := range c.nodes {
		if !n.seen.Before(cutoff) || c.connected(id, memo) || c.inConflict(id) {
			continue
		}
		c.evict(n)
		statements++
	}
	return statements, c.frags.expire(cutoff)
}

func (c *Chain) inConflict(id [32]byte) bool {
	return c.dead != nil && (c.dead.A.ID() == id || c.dead.B.ID() == id)
}

func (c *Chain) evict(n *node) {
	delete(c.nodes, n.st.ID())
	p := n.st.Parent()
	c.kids[p] = slices.DeleteFunc(c.kids[p], func(x [32]byte) bool { return x == n.st.ID() })
	if len(c.kids[p]) == 0 {
		delete(c.kids, p)
	}
	if n.counting {
		c.children[p] = slices.DeleteFunc(c.children[p], func(x [32]byte) bool { return x == n.st.ID() })
		if len(c.children[p]) == 0 {
			delete(c.children, p)
		}
	}
}
