package hub

import (
	"cmp"
	"slices"
)

// WriteID is a write's ID, H(sigInput) (§5.5).
type WriteID [32]byte

// Superseder answers the supersession question of §9.2 for two writes. The
// merge engine (package tandem/record) provides it; the hub takes it through
// this interface so that garbage collection does not depend on the engine.
type Superseder interface {
	// Superseded reports whether write x is superseded by write w (§9.2:
	// same record and field, and w has seen all of x). It must be a strict
	// partial order.
	Superseded(x, w WriteID) bool
}

// SupersederFunc adapts a function to a Superseder. With the merge engine,
// given the writes by ID:
//
//	hub.SupersederFunc(func(x, w hub.WriteID) bool {
//		return record.Supersedes(writes[w], writes[x])
//	})
type SupersederFunc func(x, w WriteID) bool

// Superseded calls f(x, w).
func (f SupersederFunc) Superseded(x, w WriteID) bool { return f(x, w) }

// MessageKind says what a kind-1 message holds, for garbage collection.
type MessageKind int

const (
	// RecordState is a message holding (part of) a data record's writes.
	RecordState MessageKind = iota
	// InventoryFragment is a snapshot inventory fragment (§10.5); never
	// dominated (§10.7).
	InventoryFragment
	// RosterState is a message holding roster statements (the _roster
	// record, including the statements that prove a collection dead); never
	// pruned (§10.7).
	RosterState
)

// GCMessage describes one hub message for garbage collection (§10.7).
type GCMessage struct {
	ID     ID
	Kind   MessageKind
	Record string    // the record the message's writes belong to
	Writes []WriteID // every write in the message, valid or held
	// Held is set when the message contains a write held for a missing
	// roster statement (§8.3). Such a message is never destroyed, and its
	// held writes never dominate another message's writes.
	Held bool
}

// Dominated returns the ids of the messages that may be destroyed (§10.7): a
// message m is dominated by a message n of the same record if every write in
// m is in n or is superseded by a write in n. Inventory fragments, roster
// messages and messages with held writes are never returned.
//
// Two messages can dominate each other (identical writes, or each covering
// the other's superseded rest), so Dominated never destroys both: it keeps
// messages greedily, strongest first (ties by id), and returns a message
// only if a kept message dominates it. Every write of a destroyed message is
// therefore in, or superseded by a write in, a message that stays. See
// docs/decisions/tandem-hub-gc.md.
func Dominated(msgs []GCMessage, s Superseder) []ID {
	byRecord := map[string][]GCMessage{}
	for _, m := range msgs {
		if m.Kind == RecordState {
			byRecord[m.Record] = append(byRecord[m.Record], m)
		}
	}
	var out []ID
	for _, group := range byRecord {
		out = append(out, dominatedInRecord(group, s)...)
	}
	slices.Sort(out)
	return out
}

func dominatedInRecord(group []GCMessage, s Superseder) []ID {
	// Domination is a preorder (reflexive and transitive, since
	// supersession is transitive). A message that strictly dominates
	// another also dominates all it does, so it dominates strictly more:
	// sorting by that count, largest first, puts every message after those
	// that strictly dominate it.
	count := make(map[ID]int, len(group))
	for _, n := range group {
		for _, m := range group {
			if dominates(n, m, s) {
				count[n.ID]++
			}
		}
	}
	slices.SortFunc(group, func(a, b GCMessage) int {
		if c := cmp.Compare(count[b.ID], count[a.ID]); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var kept []GCMessage
	var out []ID
	for _, m := range group {
		if !m.Held && slices.ContainsFunc(kept, func(n GCMessage) bool { return dominates(n, m, s) }) {
			out = append(out, m.ID)
			continue
		}
		kept = append(kept, m)
	}
	return out
}

// dominates reports whether every write of m is in n or superseded by one of
// n's writes. A message with held writes dominates nothing: a held write may
// turn out invalid.
func dominates(n, m GCMessage, s Superseder) bool {
	if n.Held || n.ID == m.ID {
		return false
	}
	in := make(map[WriteID]bool, len(n.Writes))
	for _, w := range n.Writes {
		in[w] = true
	}
	for _, x := range m.Writes {
		if in[x] {
			continue
		}
		if !slices.ContainsFunc(n.Writes, func(w WriteID) bool { return s.Superseded(x, w) }) {
			return false
		}
	}
	return true
}
