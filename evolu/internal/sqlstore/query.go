package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// The protocol.Storage queries, answered from the block index.

func checkRange(begin, end, size int) error {
	if begin < 0 || begin > end || end > size {
		return fmt.Errorf("sqlstore: invalid range [%d, %d) of %d", begin, end, size)
	}
	return nil
}

// Size implements protocol.Storage.
func (s *Store) Size(ctx context.Context, owner protocol.OwnerID) (int, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return 0, err
	}
	defer x.mu.Unlock()
	return x.size(), nil
}

// prefixFP is the XOR of the fingerprints of timestamps [0, i).
func (s *Store) prefixFP(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, i int) (protocol.Fingerprint, error) {
	var fp protocol.Fingerprint
	if i == 0 {
		return fp, nil
	}
	k, off := x.locate(i)
	switch {
	case off == 0:
		return x.prefixFP[k], nil
	case off == x.blocks[k].n:
		return x.prefixFP[k+1], nil
	}
	r, err := s.blockRows(ctx, owner, x, k)
	if err != nil {
		return fp, err
	}
	return x.prefixFP[k].Xor(r.pfx[off]), nil
}

// Fingerprint implements protocol.Storage.
func (s *Store) Fingerprint(ctx context.Context, owner protocol.OwnerID, begin, end int) (protocol.Fingerprint, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return protocol.Fingerprint{}, err
	}
	defer x.mu.Unlock()
	return s.fingerprint(ctx, owner, x, begin, end)
}

func (s *Store) fingerprint(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, begin, end int) (protocol.Fingerprint, error) {
	if err := checkRange(begin, end, x.size()); err != nil {
		return protocol.Fingerprint{}, err
	}
	if begin == end {
		return protocol.Fingerprint{}, nil
	}
	a, err := s.prefixFP(ctx, owner, x, begin)
	if err != nil {
		return a, err
	}
	b, err := s.prefixFP(ctx, owner, x, end)
	return a.Xor(b), err
}

// timestampAt reads the timestamp at index i < size.
func (s *Store) timestampAt(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, i int) (protocol.TimestampBytes, error) {
	k, off := x.locate(i)
	r, err := s.blockRows(ctx, owner, x, k)
	if err != nil {
		return protocol.TimestampBytes{}, fmt.Errorf("sqlstore: timestamp at %d: %w", i, err)
	}
	return r.ts[off], nil
}

// FingerprintRanges implements protocol.Storage.
func (s *Store) FingerprintRanges(ctx context.Context, owner protocol.OwnerID, buckets []int, ub protocol.UpperBound) ([]protocol.Range, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	rs := make([]protocol.Range, len(buckets))
	prev := 0
	prevFP := protocol.Fingerprint{}
	for i, b := range buckets {
		if err := checkRange(prev, b, x.size()); err != nil {
			return nil, err
		}
		fp, err := s.prefixFP(ctx, owner, x, b)
		if err != nil {
			return nil, err
		}
		rs[i] = protocol.Range{Type: protocol.RangeFingerprint, Fingerprint: prevFP.Xor(fp), UpperBound: ub}
		if i < len(buckets)-1 {
			if b >= x.size() {
				return nil, fmt.Errorf("sqlstore: bucket %d beyond %d", b, x.size())
			}
			t, err := s.timestampAt(ctx, owner, x, b)
			if err != nil {
				return nil, err
			}
			rs[i].UpperBound = protocol.BoundAt(t)
		}
		prev, prevFP = b, fp
	}
	return rs, nil
}

// FindLowerBound implements protocol.Storage.
func (s *Store) FindLowerBound(ctx context.Context, owner protocol.OwnerID, begin, end int, ub protocol.UpperBound) (int, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return 0, err
	}
	defer x.mu.Unlock()
	if err := checkRange(begin, end, x.size()); err != nil {
		return 0, err
	}
	if end == 0 || begin == end || ub.Infinite {
		return end, nil
	}
	// The last block starting before ub holds the first timestamp >= ub,
	// or that timestamp starts the next block.
	k := sort.Search(len(x.blocks), func(k int) bool { return x.blocks[k].start.Compare(ub.Timestamp) >= 0 }) - 1
	if k < 0 {
		return 0, nil
	}
	r, err := s.blockRows(ctx, owner, x, k)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: lower bound: %w", err)
	}
	return min(x.prefixN[k]+r.lowerBound(ub.Timestamp), end), nil
}

// Iterate implements protocol.Storage. It reads in chunks, from the cached
// block rows where it can (docs/decisions/evolu-block-row-cache.md), else
// with a query, and calls fn without holding a lock or a database cursor.
func (s *Store) Iterate(ctx context.Context, owner protocol.OwnerID, begin, end int, fn func(protocol.TimestampBytes, int) bool) error {
	x, err := s.index(ctx, owner)
	if err != nil {
		return err
	}
	if err := checkRange(begin, end, x.size()); err != nil {
		x.mu.Unlock()
		return err
	}
	if begin == end {
		x.mu.Unlock()
		return nil
	}
	from, err := s.timestampAt(ctx, owner, x, begin)
	x.mu.Unlock()
	if err != nil {
		return err
	}
	index := begin
	first := true // from itself is next; afterwards, what follows from
	for index < end {
		ts, err := s.nextTimestamps(ctx, owner, from, first, min(chunk, end-index))
		if err != nil {
			return err
		}
		if len(ts) == 0 {
			return s.repairOwner(ctx, owner, fmt.Errorf("sqlstore: iterate: index %d missing", index))
		}
		for _, t := range ts {
			if !fn(t, index) {
				return nil
			}
			index++
		}
		from, first = ts[len(ts)-1], false
	}
	return nil
}

// nextTimestamps returns at most n of the owner's timestamps in order from
// from (included when incl, else after it).
func (s *Store) nextTimestamps(ctx context.Context, owner protocol.OwnerID, from protocol.TimestampBytes, incl bool, n int) ([]protocol.TimestampBytes, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return nil, err
	}
	ts := s.cachedTimestamps(owner, x, from, incl, n)
	x.mu.Unlock()
	if len(ts) > 0 {
		return ts, nil
	}
	if incl {
		return s.readTimestamps(ctx, `select t from evolu_change where owner = ? and t >= ? order by t limit ?`, owner[:], from[:], n)
	}
	return s.readTimestamps(ctx, `select t from evolu_change where owner = ? and t > ? order by t limit ?`, owner[:], from[:], n)
}

// cachedTimestamps is nextTimestamps from the cached rows of consecutive
// blocks, stopping at the first block not cached; x.mu is held.
func (s *Store) cachedTimestamps(owner protocol.OwnerID, x *ownerIndex, from protocol.TimestampBytes, incl bool, n int) []protocol.TimestampBytes {
	k := max(0, sort.Search(len(x.blocks), func(k int) bool { return x.blocks[k].start.Compare(from) > 0 })-1)
	var out []protocol.TimestampBytes
	for ; k < len(x.blocks) && len(out) < n; k++ {
		r := s.rows.get(blockKey{owner, x.blocks[k].start})
		if r == nil || len(r.ts) != x.blocks[k].n {
			break
		}
		j := sort.Search(len(r.ts), func(j int) bool {
			c := r.ts[j].Compare(from)
			return c > 0 || incl && c == 0
		})
		out = append(out, r.ts[j:min(len(r.ts), j+n-len(out))]...)
	}
	return out
}

func (s *Store) readTimestamps(ctx context.Context, q string, args ...any) ([]protocol.TimestampBytes, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: iterate: %w", err)
	}
	defer rows.Close()
	var out []protocol.TimestampBytes
	var raw []byte
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("sqlstore: iterate: %w", err)
		}
		var t protocol.TimestampBytes
		copy(t[:], raw)
		out = append(out, t)
	}
	return out, rows.Err()
}

// ReadChange implements protocol.Storage.
func (s *Store) ReadChange(ctx context.Context, owner protocol.OwnerID, t protocol.TimestampBytes) ([]byte, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	if c, ok := x.ahead[t]; ok {
		delete(x.ahead, t)
		return c, nil
	}
	ahead, err := s.readAhead(ctx, owner, t)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read change %s: %w", t.Timestamp(), err)
	}
	c, ok := ahead[t]
	if !ok {
		return nil, fmt.Errorf("sqlstore: read change %s: %w", t.Timestamp(), sql.ErrNoRows)
	}
	delete(ahead, t)
	x.ahead = ahead
	return c, nil
}

// Read-ahead bounds: at most aheadRows changes and aheadBytes bytes (but
// always the requested one); a change over aheadOne bytes is read only when
// requested, on its own.
const (
	aheadRows  = 256
	aheadBytes = 256 << 10
	aheadOne   = 64 << 10
)

// readAhead reads the change of t and those of the timestamps after it, in
// one query. SQLite reads a blob's length from the record header, so a large
// change is not loaded only to be dropped.
func (s *Store) readAhead(ctx context.Context, owner protocol.OwnerID, t protocol.TimestampBytes) (map[protocol.TimestampBytes][]byte, error) {
	out := make(map[protocol.TimestampBytes][]byte)
	large, err := s.readAheadRows(ctx, owner, t, out)
	if err != nil || !large {
		return out, err
	}
	// The requested change is too large to read ahead: read it alone (after
	// the read-ahead query released its connection).
	var c []byte
	if err := s.scanRow(ctx, `select change from evolu_change where owner = ? and t = ?`, []any{owner[:], t[:]}, &c); err != nil {
		return nil, err
	}
	out[t] = c
	return out, nil
}

// readAheadRows fills out from t on, and reports whether the first change
// was too large to read ahead.
func (s *Store) readAheadRows(ctx context.Context, owner protocol.OwnerID, t protocol.TimestampBytes, out map[protocol.TimestampBytes][]byte) (bool, error) {
	rows, err := s.query(ctx, `select t, length(change), case when length(change) <= ? then change end
		from evolu_change where owner = ? and t >= ? order by t limit ?`, aheadOne, owner[:], t[:], aheadRows)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	total := 0
	for rows.Next() {
		var traw, c []byte
		var l int
		if err := rows.Scan(&traw, &l, &c); err != nil {
			return false, err
		}
		first := len(out) == 0
		if l > aheadOne {
			return first, nil
		}
		if !first && total+l > aheadBytes {
			break
		}
		if c == nil {
			c = []byte{}
		}
		var k protocol.TimestampBytes
		copy(k[:], traw)
		out[k] = c
		total += l
	}
	return false, rows.Err()
}

// repairOwner is repair for a caller that does not hold the owner's index.
func (s *Store) repairOwner(ctx context.Context, owner protocol.OwnerID, cause error) error {
	x, err := s.index(ctx, owner)
	if err != nil {
		return err
	}
	defer x.mu.Unlock()
	return s.repair(ctx, owner, x, cause)
}
