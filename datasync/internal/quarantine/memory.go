package quarantine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Memory is an in-memory [Ledger] for unit tests. Its zero value is empty
// and ready to use. [Memory.Restart] does what opening a [Dir] after a
// crash does: every digest still in flight becomes quarantined.
type Memory struct {
	mu          sync.Mutex
	inflight    map[string]*flight
	quarantined map[string]string // digest -> doc
	order       []string          // quarantined digests, oldest first
}

type flight struct {
	n   int
	doc string
}

// Begin implements [Ledger].
func (m *Memory) Begin(digest, doc string) error {
	if err := checkDigest(digest); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, q := m.quarantined[digest]; q {
		return fmt.Errorf("%w: %s (document %q)", ErrQuarantined, digest, doc)
	}
	if m.inflight == nil {
		m.inflight = map[string]*flight{}
	}
	f := m.inflight[digest]
	if f == nil {
		f = &flight{doc: doc}
		m.inflight[digest] = f
	}
	f.n++
	return nil
}

// End implements [Ledger].
func (m *Memory) End(digest string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.inflight[digest]; f != nil {
		if f.n--; f.n == 0 {
			delete(m.inflight, digest)
		}
	}
	return nil
}

// Quarantined implements [Ledger].
func (m *Memory) Quarantined() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return entries(m.quarantined)
}

// Release implements [Ledger].
func (m *Memory) Release(digest string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.quarantined, digest)
	m.order = slices.DeleteFunc(m.order, func(d string) bool { return d == digest })
	return nil
}

// InFlight lists the digests recorded as in flight, sorted.
func (m *Memory) InFlight() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.inflight))
}

// Restart simulates a process that died and a new one that opened the
// ledger: every digest in flight becomes quarantined.
func (m *Memory) Restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quarantined == nil {
		m.quarantined = map[string]string{}
	}
	for _, d := range slices.Sorted(maps.Keys(m.inflight)) {
		if _, q := m.quarantined[d]; !q {
			m.order = append(m.order, d)
		}
		m.quarantined[d] = m.inflight[d].doc
	}
	m.inflight = nil
	for len(m.order) > MaxQuarantined {
		delete(m.quarantined, m.order[0])
		m.order = m.order[1:]
	}
}

func entries(q map[string]string) []Entry {
	out := make([]Entry, 0, len(q))
	for d, doc := range q {
		out = append(out, Entry{Digest: d, Doc: doc})
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Digest, b.Digest) })
	return out
}
