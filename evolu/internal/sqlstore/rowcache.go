package sqlstore

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Block rows, packed on disk and cached in memory
// (docs/decisions/evolu-block-row-cache.md).
//
// Reconciliation asks, for the same few blocks, for a prefix fingerprint
// and the timestamp at a bucket boundary (FingerprintRanges), then, in the
// next round, for the fingerprint up to that same boundary and the index of
// the same timestamp (Fingerprint, FindLowerBound). A block's rows, read
// once (one row of evolu_block_rows), answer all of them from memory.

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

// blockRows returns the rows of block k of x (x.mu held): from the cache,
// else from the block's packed rows (evolu_block_rows, one value), else
// (a database written before that table) from evolu_change.
func (s *Store) blockRows(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, k int) (*blockRows, error) {
	b := x.blocks[k]
	key := blockKey{owner, b.start}
	if r := s.rows.get(key); r != nil && len(r.ts) == b.n {
		return r, nil
	}
	var packed []byte
	err := s.scanRow(ctx, `select rows from evolu_block_rows where owner = ? and start = ?`, []any{owner[:], b.start[:]}, &packed)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: block rows: %w", err)
	}
	r := unpackRows(packed, b.n)
	if r != nil && r.pfx[b.n] != b.fp {
		r = nil // packed rows of another version of the block
	}
	if r == nil {
		if r, err = s.queryBlockRows(ctx, owner, b); errors.Is(err, errBlockRows) {
			return nil, s.repair(ctx, owner, x, err)
		} else if err != nil {
			return nil, err
		}
	}
	s.rows.put(key, r)
	return r, nil
}

// errBlockRows is a block whose rows are not what the index says.
var errBlockRows = errors.New("sqlstore: block rows")

const blockRowsQuery = `select t, fp from evolu_change where owner = ? and t >= ? order by t limit ?`

// queryBlockRows reads the rows of b from evolu_change.
func (s *Store) queryBlockRows(ctx context.Context, owner protocol.OwnerID, b block) (*blockRows, error) {
	rows, err := s.query(ctx, blockRowsQuery, owner[:], b.start[:], b.n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: block rows: %w", err)
	}
	r, err := scanBlockRows(rows, b.n)
	if err == nil && (r.ts[0] != b.start || r.pfx[b.n] != b.fp) {
		return nil, fmt.Errorf("%w: the rows of block %s do not make its fingerprint", errBlockRows, b.start.Timestamp())
	}
	return r, err
}

// scanBlockRows reads and closes the n rows (t, fp) of a block.
func scanBlockRows(rows *sql.Rows, n int) (*blockRows, error) {
	defer rows.Close()
	r := &blockRows{ts: make([]protocol.TimestampBytes, 0, n), pfx: make([]protocol.Fingerprint, 1, n+1)}
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
	if len(r.ts) != n {
		return nil, fmt.Errorf("%w: block of %d has %d rows", errBlockRows, n, len(r.ts))
	}
	return r, nil
}

// rowBytes is the size of one packed row: a timestamp, then its
// fingerprint.
const rowBytes = len(protocol.TimestampBytes{}) + len(protocol.Fingerprint{})

// pack lays r out as evolu_block_rows.rows: n rows of rowBytes.
func (r *blockRows) pack() []byte {
	out := make([]byte, 0, len(r.ts)*rowBytes)
	for j, t := range r.ts {
		f := r.pfx[j].Xor(r.pfx[j+1])
		out = append(append(out, t[:]...), f[:]...)
	}
	return out
}

// unpackRows decodes packed rows of a block of n, or returns nil when they
// are missing or do not have n rows.
func unpackRows(packed []byte, n int) *blockRows {
	if n == 0 || len(packed) != n*rowBytes {
		return nil
	}
	r := &blockRows{ts: make([]protocol.TimestampBytes, n), pfx: make([]protocol.Fingerprint, n+1)}
	for j := range n {
		row := packed[j*rowBytes : (j+1)*rowBytes]
		r.ts[j] = protocol.TimestampBytes(row)
		r.pfx[j+1] = r.pfx[j].Xor(protocol.Fingerprint(row[len(r.ts[j]):]))
	}
	return r
}

// lowerBound is the offset in r of the first timestamp >= t (len when none).
func (r *blockRows) lowerBound(t protocol.TimestampBytes) int {
	return sort.Search(len(r.ts), func(j int) bool { return r.ts[j].Compare(t) >= 0 })
}

// touchedRows returns the rows of every touched block of e, inside the
// write transaction tx, after the new rows (ts, fps) were inserted. A block
// whose rows all came from this write (its n timestamps from its start to
// the next block's) is built from them, as pushes append whole blocks;
// another is read from evolu_change.
func (s *Store) touchedRows(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, e *blockEditor, ts []protocol.TimestampBytes, fps []protocol.Fingerprint) (map[protocol.TimestampBytes]*blockRows, error) {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return ts[order[a]].Compare(ts[order[b]]) < 0 })
	from := func(t protocol.TimestampBytes) int {
		return sort.Search(len(order), func(j int) bool { return ts[order[j]].Compare(t) >= 0 })
	}
	out := make(map[protocol.TimestampBytes]*blockRows, len(e.touched))
	for k, b := range e.blocks {
		if !e.touched[b.start] {
			continue
		}
		lo, hi := from(b.start), len(order)
		if k+1 < len(e.blocks) {
			hi = from(e.blocks[k+1].start)
		}
		if hi-lo != b.n {
			rows, err := tx.QueryContext(ctx, s.rebind(blockRowsQuery), owner[:], b.start[:], b.n)
			if err != nil {
				return nil, fmt.Errorf("sqlstore: block rows: %w", err)
			}
			if out[b.start], err = scanBlockRows(rows, b.n); err != nil {
				return nil, err
			}
			continue
		}
		r := &blockRows{ts: make([]protocol.TimestampBytes, 0, b.n), pfx: make([]protocol.Fingerprint, 1, b.n+1)}
		for _, i := range order[lo:hi] {
			r.ts = append(r.ts, ts[i])
			r.pfx = append(r.pfx, r.pfx[len(r.pfx)-1].Xor(fps[i]))
		}
		out[b.start] = r
	}
	return out, nil
}

// dropOwner forgets every cached block of owner.
func (c *rowCache) dropOwner(owner protocol.OwnerID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.byKey {
		if k.owner == owner {
			c.order.Remove(e)
			delete(c.byKey, k)
		}
	}
}
