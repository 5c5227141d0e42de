package sqlstore

import (
	"container/list"
	"context"
	"database/sql"
	"fmt"
	"sort"
	"sync"

	"github.com/ferry-sync/ferry/evolu/protocol"
)

// Block rows in memory (docs/decisions/evolu-block-row-cache.md).
//
// Reconciliation asks, for the same few blocks, for a prefix fingerprint
// and the timestamp at a bucket boundary (FingerprintRanges), then, in the
// next round, for the fingerprint up to that same boundary and the index of
// the same timestamp (Fingerprint, FindLowerBound). Each was one SQL query of
// up to 64 rows. A block's rows, read once with one query, answer all of
// them from memory.

// maxCachedBlocks bounds the blocks whose rows are kept, over all owners:
// about 4 KB each (128 × 16-byte timestamps and 12-byte prefix
// fingerprints), so at most about 8 MB.
const maxCachedBlocks = 2048

// blockRows are the rows of one block, in timestamp order.
type blockRows struct {
	ts []protocol.TimestampBytes
	// pfx[j] is the XOR of the fingerprints of ts[:j]; len(ts)+1 entries.
	pfx []protocol.Fingerprint
}

type blockKey struct {
	owner protocol.OwnerID
	start protocol.TimestampBytes
}

// rowCache is a least-recently-used set of blockRows. Entries are valid
// while the block's rows do not change: Write drops the blocks it touched
// after its commit.
type rowCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *rowEntry, most recent first
	byKey map[blockKey]*list.Element
}

type rowEntry struct {
	key  blockKey
	rows *blockRows
}

func newRowCache(max int) *rowCache {
	return &rowCache{max: max, order: list.New(), byKey: make(map[blockKey]*list.Element)}
}

func (c *rowCache) get(k blockKey) *blockRows {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[k]
	if e == nil {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*rowEntry).rows
}

func (c *rowCache) put(k blockKey, r *blockRows) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		e.Value.(*rowEntry).rows = r
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&rowEntry{key: k, rows: r})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*rowEntry).key)
	}
}

// drop forgets the blocks of owner that start at starts.
func (c *rowCache) drop(owner protocol.OwnerID, starts []protocol.TimestampBytes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range starts {
		k := blockKey{owner, s}
		if e := c.byKey[k]; e != nil {
			c.order.Remove(e)
			delete(c.byKey, k)
		}
	}
}

// blockRows returns the rows of block k of x (x.mu held), reading them with
// one query on a miss.
func (s *Store) blockRows(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, k int) (*blockRows, error) {
	b := x.blocks[k]
	key := blockKey{owner, b.start}
	if r := s.rows.get(key); r != nil && len(r.ts) == b.n {
		return r, nil
	}
	rows, err := s.query(ctx, `select t, fp from evolu_ts where owner = ? and t >= ? order by t limit ?`, owner[:], b.start[:], b.n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: block rows: %w", err)
	}
	defer rows.Close()
	r := &blockRows{ts: make([]protocol.TimestampBytes, 0, b.n), pfx: make([]protocol.Fingerprint, 1, b.n+1)}
	var traw, fraw sql.RawBytes // copied below: no copy by database/sql
	for rows.Next() {
		if err := rows.Scan(&traw, &fraw); err != nil {
			return nil, fmt.Errorf("sqlstore: block rows: %w", err)
		}
		var t protocol.TimestampBytes
		var f protocol.Fingerprint
		copy(t[:], traw)
		copy(f[:], fraw)
		r.ts = append(r.ts, t)
		r.pfx = append(r.pfx, r.pfx[len(r.pfx)-1].Xor(f))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: block rows: %w", err)
	}
	if len(r.ts) != b.n {
		return nil, fmt.Errorf("sqlstore: block rows: block of %d has %d rows", b.n, len(r.ts))
	}
	s.rows.put(key, r)
	return r, nil
}

// lowerBound is the offset in r of the first timestamp >= t (len when none).
func (r *blockRows) lowerBound(t protocol.TimestampBytes) int {
	return sort.Search(len(r.ts), func(j int) bool { return r.ts[j].Compare(t) >= 0 })
}

// cacheWritten caches, after a committed write, the touched blocks whose
// rows all came from that write (ts and fps, the new timestamps and their
// fingerprints): a block's rows are its n timestamps from its start to the
// next block's, so when the write added n timestamps there, they are all of
// them. Pushes append whole blocks, which the next reconciliation of another
// device is likely to read.
func (s *Store) cacheWritten(owner protocol.OwnerID, blocks []block, touched map[protocol.TimestampBytes]bool, ts []protocol.TimestampBytes, fps []protocol.Fingerprint) {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return ts[order[a]].Compare(ts[order[b]]) < 0 })
	from := func(t protocol.TimestampBytes) int {
		return sort.Search(len(order), func(j int) bool { return ts[order[j]].Compare(t) >= 0 })
	}
	for k, b := range blocks {
		if !touched[b.start] {
			continue
		}
		lo, hi := from(b.start), len(order)
		if k+1 < len(blocks) {
			hi = from(blocks[k+1].start)
		}
		if hi-lo != b.n {
			continue
		}
		r := &blockRows{ts: make([]protocol.TimestampBytes, 0, b.n), pfx: make([]protocol.Fingerprint, 1, b.n+1)}
		for _, i := range order[lo:hi] {
			r.ts = append(r.ts, ts[i])
			r.pfx = append(r.pfx, r.pfx[len(r.pfx)-1].Xor(fps[i]))
		}
		s.rows.put(blockKey{owner, b.start}, r)
	}
}
