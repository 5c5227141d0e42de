package protocol

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"
	"sync"
)

// MemoryStorage is an in-memory RelayStorage for tests and tools: sorted
// timestamps per owner with their fingerprints and prefix XORs (rebuilt
// after writes), so a range fingerprint costs O(1). The SQLite stores of
// the relay and client packages are the production implementations.
type MemoryStorage struct {
	mu     sync.Mutex
	owners map[OwnerID]*memOwner
	// Quota, when positive, limits the stored change bytes per owner.
	Quota int
}

type memOwner struct {
	ts      []TimestampBytes
	fps     []Fingerprint // fingerprint of ts[i]
	prefix  []Fingerprint // prefix[i]: XOR of fps[:i]; nil when stale
	changes map[TimestampBytes][]byte
	key     *WriteKey
	bytes   int
}

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{owners: make(map[OwnerID]*memOwner)}
}

func (s *MemoryStorage) owner(o OwnerID) *memOwner {
	m := s.owners[o]
	if m == nil {
		m = &memOwner{changes: make(map[TimestampBytes][]byte)}
		s.owners[o] = m
	}
	return m
}

// Timestamps returns a copy of the owner's sorted timestamps.
func (s *MemoryStorage) Timestamps(o OwnerID) []TimestampBytes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.owner(o).ts)
}

// Size implements Storage.
func (s *MemoryStorage) Size(_ context.Context, o OwnerID) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owner(o).ts), nil
}

func checkRange(begin, end, size int) error {
	if begin < 0 || begin > end || end > size {
		return fmt.Errorf("evolu: invalid range [%d, %d) of %d", begin, end, size)
	}
	return nil
}

// Fingerprint implements Storage.
func (s *MemoryStorage) Fingerprint(_ context.Context, o OwnerID, begin, end int) (Fingerprint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.owner(o)
	if err := checkRange(begin, end, len(m.ts)); err != nil {
		return Fingerprint{}, err
	}
	if m.prefix == nil {
		m.prefix = make([]Fingerprint, len(m.fps)+1)
		for i, f := range m.fps {
			m.prefix[i+1] = m.prefix[i].Xor(f)
		}
	}
	return m.prefix[begin].Xor(m.prefix[end]), nil
}

// FingerprintRanges implements Storage.
func (s *MemoryStorage) FingerprintRanges(ctx context.Context, o OwnerID, buckets []int, ub UpperBound) ([]Range, error) {
	rs := make([]Range, len(buckets))
	prev := 0
	for i, b := range buckets {
		fp, err := s.Fingerprint(ctx, o, prev, b)
		if err != nil {
			return nil, err
		}
		rs[i] = Range{Type: RangeFingerprint, Fingerprint: fp, UpperBound: ub}
		if i < len(buckets)-1 {
			s.mu.Lock()
			ts := s.owner(o).ts
			if b >= len(ts) {
				s.mu.Unlock()
				return nil, fmt.Errorf("evolu: bucket %d beyond %d", b, len(ts))
			}
			rs[i].UpperBound = BoundAt(ts[b])
			s.mu.Unlock()
		}
		prev = b
	}
	return rs, nil
}

// FindLowerBound implements Storage.
func (s *MemoryStorage) FindLowerBound(_ context.Context, o OwnerID, begin, end int, ub UpperBound) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.owner(o)
	if err := checkRange(begin, end, len(m.ts)); err != nil {
		return 0, err
	}
	if end == 0 || begin == end || ub.Infinite {
		return end, nil
	}
	i, _ := slices.BinarySearchFunc(m.ts, ub.Timestamp, TimestampBytes.Compare)
	return min(i, end), nil
}

// Iterate implements Storage.
func (s *MemoryStorage) Iterate(_ context.Context, o OwnerID, begin, end int, fn func(TimestampBytes, int) bool) error {
	s.mu.Lock()
	m := s.owner(o)
	if err := checkRange(begin, end, len(m.ts)); err != nil {
		s.mu.Unlock()
		return err
	}
	ts := slices.Clone(m.ts[begin:end])
	s.mu.Unlock()
	for i, t := range ts {
		if !fn(t, begin+i) {
			return nil
		}
	}
	return nil
}

// ReadChange implements Storage.
func (s *MemoryStorage) ReadChange(_ context.Context, o OwnerID, t TimestampBytes) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.owner(o).changes[t]
	if !ok {
		return nil, fmt.Errorf("evolu: no change for %s", t.Timestamp())
	}
	return c, nil
}

// WriteMessages implements Storage.
func (s *MemoryStorage) WriteMessages(_ context.Context, o OwnerID, msgs []EncryptedMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.owner(o)
	add := 0
	fresh := make(map[TimestampBytes][]byte)
	for _, msg := range msgs {
		t := msg.Timestamp.Bytes()
		if _, ok := m.changes[t]; ok {
			continue
		}
		if _, ok := fresh[t]; ok {
			continue
		}
		fresh[t] = msg.Change
		add += len(msg.Change)
	}
	if s.Quota > 0 && m.bytes+add > s.Quota {
		return &QuotaExceededError{OwnerID: o}
	}
	keys := make([]TimestampBytes, 0, len(fresh))
	for t, c := range fresh {
		m.changes[t] = slices.Clone(c)
		keys = append(keys, t)
	}
	if len(keys) > 0 {
		slices.SortFunc(keys, TimestampBytes.Compare)
		m.ts, m.fps = mergeSorted(m.ts, m.fps, keys)
		m.prefix = nil
	}
	m.bytes += add
	return nil
}

// ValidateWriteKey implements RelayStorage.
func (s *MemoryStorage) ValidateWriteKey(_ context.Context, o OwnerID, key WriteKey) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.owner(o)
	if m.key == nil {
		k := key
		m.key = &k
		return true, nil
	}
	return subtle.ConstantTimeCompare(m.key[:], key[:]) == 1, nil
}

// mergeSorted merges the sorted new timestamps into the sorted ts and their
// fingerprints.
func mergeSorted(ts []TimestampBytes, fps []Fingerprint, add []TimestampBytes) ([]TimestampBytes, []Fingerprint) {
	outT := make([]TimestampBytes, 0, len(ts)+len(add))
	outF := make([]Fingerprint, 0, len(ts)+len(add))
	i, j := 0, 0
	for i < len(ts) || j < len(add) {
		if j == len(add) || (i < len(ts) && ts[i].Compare(add[j]) < 0) {
			outT, outF = append(outT, ts[i]), append(outF, fps[i])
			i++
		} else {
			outT, outF = append(outT, add[j]), append(outF, TimestampFingerprint(add[j]))
			j++
		}
	}
	return outT, outF
}
