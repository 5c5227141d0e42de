// Package testnet is test support for datasync: simulated transports that
// the tests of several packages share. [Network] is an in-memory,
// step-driven network that loses, duplicates and reorders; [GroupNet] a
// group message path with an MLS-style sender generation window; [Pipe] a
// reliable in-memory transport.Conn pair; [Shuffle] a link that delivers
// what was sent in random order. None of it is a production transport.
package testnet

import (
	"math/rand/v2"
	"slices"
)

// Message is one delivery on a [Network].
type Message struct {
	From, To string
	Data     []byte
}

// Network is an in-memory, step-driven network for tests: messages sent on
// it are delivered by [Network.Next], which may drop, duplicate and reorder
// them, and never delivers across a partition. It is deterministic for a
// given seed. It is not safe for concurrent use; tests drive it from one
// goroutine.
type Network struct {
	// Loss and Dup are the probabilities that a sent message is dropped,
	// or delivered twice.
	Loss, Dup float64
	// Reorder makes Next deliver a random in-flight message instead of the
	// oldest.
	Reorder bool

	rng     *rand.Rand
	blocked map[[2]string]bool
	queue   []Message

	// Sent counts messages handed to Send; Bytes their total length;
	// Delivered those Next returned.
	Sent, Bytes, Delivered int
}

// NewNetwork returns a reliable, ordered network seeded with seed.
func NewNetwork(seed uint64) *Network {
	return &Network{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), blocked: map[[2]string]bool{}}
}

// Send puts a message in flight.
func (n *Network) Send(from, to string, data []byte) {
	n.Sent++
	n.Bytes += len(data)
	if n.blocked[pair(from, to)] || n.rng.Float64() < n.Loss {
		return
	}
	m := Message{From: from, To: to, Data: slices.Clone(data)}
	n.queue = append(n.queue, m)
	if n.rng.Float64() < n.Dup {
		n.queue = append(n.queue, m)
	}
}

// Partition cuts the link between a and b in both directions; messages in
// flight across it are lost.
func (n *Network) Partition(a, b string) { n.blocked[pair(a, b)] = true }

// Heal restores every link.
func (n *Network) Heal() { clear(n.blocked) }

// InFlight returns how many messages wait for delivery.
func (n *Network) InFlight() int { return len(n.queue) }

// Next delivers one in-flight message; ok is false when none is left.
func (n *Network) Next() (m Message, ok bool) {
	for len(n.queue) > 0 {
		i := 0
		if n.Reorder {
			i = n.rng.IntN(len(n.queue))
		}
		m = n.queue[i]
		n.queue = slices.Delete(n.queue, i, i+1)
		if n.blocked[pair(m.From, m.To)] {
			continue
		}
		n.Delivered++
		return m, true
	}
	return Message{}, false
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}
