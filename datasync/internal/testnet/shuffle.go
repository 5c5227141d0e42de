package testnet

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// Shuffle is a one-way link that delivers what was sent in a random order
// (deterministic for a seed): the transport the media path must not assume
// is ordered. Send only queues; [Shuffle.Flush] delivers everything queued,
// shuffled, to Deliver. It is safe for concurrent use; Deliver runs on the
// goroutine that calls Flush.
type Shuffle struct {
	Deliver func(msg []byte)

	mu    sync.Mutex
	rng   *rand.Rand
	queue [][]byte
}

// NewShuffle returns a shuffling link seeded with seed.
func NewShuffle(seed uint64, deliver func([]byte)) *Shuffle {
	return &Shuffle{Deliver: deliver, rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

// Send queues a copy of msg.
func (s *Shuffle) Send(msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, slices.Clone(msg))
}

// Flush delivers every queued message in a random order and returns how
// many it delivered.
func (s *Shuffle) Flush() int {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.rng.Shuffle(len(q), func(i, j int) { q[i], q[j] = q[j], q[i] })
	s.mu.Unlock()
	for _, m := range q {
		s.Deliver(m)
	}
	return len(q)
}
