package testnet

import "slices"

// GroupNet simulates a group's message path as data-sync-v1 sees it
// (§Group scope): each frame is sealed once under the sender's ratchet and
// takes the next generation; a roster-wide frame is delivered to every other
// member, an addressed frame to one. A receiver decrypts a sender's frame
// only within a forward-distance window of the last generation it observed
// from that sender; a frame further ahead strands the receiver, which then
// decrypts nothing more from that sender (as MLS does once the ratchet
// cannot be advanced that far).
type GroupNet struct {
	// Window is the maximum forward distance.
	Window uint64

	members  []string
	gen      map[string]uint64
	next     map[[2]string]uint64 // (receiver, sender) -> next expected generation
	stranded map[[2]string]bool
	queue    []groupMsg

	// Sealed counts frames sealed; Delivered deliveries made.
	Sealed, Delivered int
}

type groupMsg struct {
	from, to string
	gen      uint64
	data     []byte
}

// NewGroupNet returns a group of members with the given window.
func NewGroupNet(window uint64, members ...string) *GroupNet {
	return &GroupNet{Window: window, members: slices.Clone(members), gen: map[string]uint64{},
		next: map[[2]string]uint64{}, stranded: map[[2]string]bool{}}
}

// Send seals data once. to names the one member it is addressed to, or ""
// for the whole roster.
func (g *GroupNet) Send(from, to string, data []byte) {
	gen := g.gen[from]
	g.gen[from]++
	g.Sealed++
	for _, m := range g.members {
		if m != from && (to == "" || to == m) {
			g.queue = append(g.queue, groupMsg{from: from, to: m, gen: gen, data: slices.Clone(data)})
		}
	}
}

// Next delivers one message in order; ok is false when none is left.
// Messages a stranded receiver cannot decrypt are dropped.
func (g *GroupNet) Next() (from, to string, data []byte, ok bool) {
	for len(g.queue) > 0 {
		m := g.queue[0]
		g.queue = g.queue[1:]
		k := [2]string{m.to, m.from}
		if g.stranded[k] {
			continue
		}
		if m.gen >= g.next[k] {
			if m.gen-g.next[k] > g.Window {
				g.stranded[k] = true
				continue
			}
			g.next[k] = m.gen + 1
		}
		g.Delivered++
		return m.from, m.to, m.data, true
	}
	return "", "", nil, false
}

// Stranded reports whether receiver can no longer decrypt sender.
func (g *GroupNet) Stranded(receiver, sender string) bool {
	return g.stranded[[2]string{receiver, sender}]
}
