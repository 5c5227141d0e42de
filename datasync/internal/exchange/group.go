package exchange

import (
	"maps"
	"sync"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// DefaultAddressedBound is how many frames a member encrypts for a group
// addressed to one member before the next goes to the whole roster. It must
// stay below the MLS forward-distance window (1000 by default in MLS
// implementations); see docs/decisions/datasync-group.md.
const DefaultAddressedBound = 64

// Group is the send side of one group space, shared by the sessions with
// each member (§Group scope).
type Group struct {
	mu        sync.Mutex
	entry     uint64
	bound     int
	members   map[PeerID]frame.Caps
	addressed int
	withheld  int
}

// NewGroup returns the group state for a space whose engine encoding is
// advertised as entry; bound is the addressed-frame bound (zero means
// [DefaultAddressedBound]).
func NewGroup(entry uint64, bound int) *Group {
	if bound <= 0 {
		bound = DefaultAddressedBound
	}
	// The count of addressed frames since the last roster-wide one is not
	// kept across restarts, so a new process starts as if the bound were
	// reached: its first addressed frame is promoted. A sender that
	// restarts often therefore never spends more than bound generations
	// only one member sees (docs/decisions/datasync-group.md).
	return &Group{entry: entry, bound: bound, members: map[PeerID]frame.Caps{}, addressed: bound}
}

// SetMember records another member and the entries it advertised.
func (g *Group) SetMember(id PeerID, caps frame.Caps) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members[id] = caps
}

// RemoveMember forgets a member that left the roster.
func (g *Group) RemoveMember(id PeerID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.members, id)
}

// Open reports whether every other member is known to speak the encoding's
// entry and entry 2: the all-members gate for roster-wide frames.
func (g *Group) Open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open()
}

func (g *Group) open() bool {
	for _, c := range maps.All(g.members) {
		if !c.Has(g.entry) || !c.Has(frame.EntryGroup) {
			return false
		}
	}
	return true
}

// Withheld counts frames withheld because the bound was reached while the
// gate was closed, or because a gate refused them.
func (g *Group) Withheld() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.withheld
}

// route applies §Group scope to one outgoing frame. No frame goes out
// unless every other member speaks the encoding's entry and entry 2 (the
// all-members gate: one ciphertext reaches the whole roster, and "a single
// such member means no member may be sent a group replication frame"). Once
// bound addressed frames have gone out since the last roster-wide one, the
// next is promoted to the roster; with the gate closed it is withheld, like
// every other frame.
func (g *Group) route(o Out) (Out, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o.Snapshot != nil || !g.open() { // the media path is 1:1 only
		g.withheld++
		return o, false
	}
	if o.To == "" || g.addressed >= g.bound {
		o.To = ""
		g.addressed = 0
		return o, true
	}
	g.addressed++
	return o, true
}

// route filters outs through the gates: the peer's advertised entries on a
// 1:1 session, the group rules in a group.
func (s *Session) route(outs []Out) []Out {
	kept := outs[:0]
	for _, o := range outs {
		if o.Frame != nil {
			if err := frame.Gate(s.caps, *o.Frame, s.enc().Entry, s.group != nil); err != nil && s.group == nil {
				continue
			}
		} else if !s.caps.Has(frame.EntryMedia) {
			continue
		}
		if s.group != nil {
			var ok bool
			if o, ok = s.group.route(o); !ok {
				continue
			}
		}
		kept = append(kept, o)
	}
	return kept
}
