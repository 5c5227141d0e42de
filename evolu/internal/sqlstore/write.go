package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// OnNew is called inside the write transaction for each message the store
// did not have; an error rolls the whole batch back.
type OnNew func(ctx context.Context, tx *sql.Tx, msg protocol.EncryptedMessage) error

// WriteMessages implements protocol.Storage: it stores the messages it does
// not have yet in one transaction, all or none, checking the quota first.
func (s *Store) WriteMessages(ctx context.Context, owner protocol.OwnerID, msgs []protocol.EncryptedMessage) error {
	return s.Write(ctx, owner, msgs, nil)
}

// Write is WriteMessages with a hook for each new message.
func (s *Store) Write(ctx context.Context, owner protocol.OwnerID, msgs []protocol.EncryptedMessage, onNew OnNew) error {
	x, err := s.index(ctx, owner)
	if err != nil {
		return err
	}
	defer x.mu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	blocks, max, gen, err := s.write(ctx, owner, x, msgs, onNew)
	if err != nil {
		return err
	}
	if blocks != nil {
		x.blocks = blocks
		x.max = max
		x.gen = gen
		x.rebuild()
	}
	x.ahead = nil
	return nil
}

// bumpGen increments the owner's generation inside tx and returns it. In
// Postgres the upsert also locks the owner's row until the transaction
// ends, so writers of one owner in several processes take turns; SQLite
// write transactions are serialized anyway.
func (s *Store) bumpGen(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID) (int64, error) {
	st, err := s.TxStmt(ctx, tx, `insert into evolu_owner (owner, gen) values (?, 1)
		on conflict (owner) do update set gen = evolu_owner.gen + 1 returning gen`)
	if err != nil {
		return 0, err
	}
	var gen int64
	if err := st.QueryRowContext(ctx, owner[:]).Scan(&gen); err != nil {
		return 0, fmt.Errorf("sqlstore: owner generation: %w", err)
	}
	return gen, nil
}

// write stores msgs in one transaction and returns the owner's new blocks,
// greatest timestamp and generation (nil blocks when nothing was new). If
// another process wrote the owner since x was loaded, x is reloaded inside
// the transaction first, so the index written matches the rows.
func (s *Store) write(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, msgs []protocol.EncryptedMessage, onNew OnNew) (_ []block, _ protocol.TimestampBytes, gen int64, err error) {
	var none protocol.TimestampBytes
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, none, 0, fmt.Errorf("sqlstore: begin: %w", err)
	}
	commit := false
	defer func() {
		if !commit {
			tx.Rollback()
		}
	}()
	if gen, err = s.bumpGen(ctx, tx, owner); err != nil {
		return nil, none, 0, err
	}
	if gen != x.gen+1 {
		// Another process wrote: start from what the database holds.
		s.forget(owner, x)
		if err := s.loadTx(ctx, tx, owner, x); err != nil {
			return nil, none, 0, err
		}
		x.gen = gen - 1
	}
	w, err := s.writeRows(ctx, tx, owner, x, msgs, onNew)
	if err != nil || w == nil {
		return nil, none, 0, err // nothing new: roll back, the generation stays
	}
	commit = true
	if err := tx.Commit(); err != nil {
		return nil, none, 0, fmt.Errorf("sqlstore: commit: %w", err)
	}
	s.rows.drop(owner, w.changed)
	for start, r := range w.touched {
		s.rows.put(blockKey{owner, start}, r)
	}
	return w.blocks, w.max, gen, nil
}

// writeRows inserts the new messages of msgs into tx and returns the
// owner's new blocks, or nil when no message was new.
func (s *Store) writeRows(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, x *ownerIndex, msgs []protocol.EncryptedMessage, onNew OnNew) (*written, error) {
	fresh, added, err := s.freshMessages(ctx, tx, owner, x, msgs)
	if err != nil {
		return nil, err
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	var stored int64
	usage, err := s.TxStmt(ctx, tx, `select stored_bytes from evolu_owner where owner = ?`)
	if err != nil {
		return nil, err
	}
	err = usage.QueryRowContext(ctx, owner[:]).Scan(&stored)
	if err != nil && err != sql.ErrNoRows {
		return nil, fmt.Errorf("sqlstore: read usage: %w", err)
	}
	if s.cfg.WithinQuota != nil && !s.cfg.WithinQuota(owner, stored+added) {
		return nil, &protocol.QuotaExceededError{OwnerID: owner}
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`update evolu_owner set stored_bytes = stored_bytes + ? where owner = ?`), added, owner[:]); err != nil {
		return nil, fmt.Errorf("sqlstore: update usage: %w", err)
	}
	ts := make([]protocol.TimestampBytes, len(fresh))
	fps := make([]protocol.Fingerprint, len(fresh))
	for i, m := range fresh {
		ts[i] = m.Timestamp.Bytes()
		fps[i] = protocol.TimestampFingerprint(ts[i])
	}
	err = s.insertRows(ctx, tx, "evolu_change (owner, t, fp, change)", owner, 3, len(fresh), func(i int, args []any) []any {
		return append(args, ts[i][:], fps[i][:], fresh[i].Change)
	})
	if err != nil {
		return nil, err
	}
	ix := blockEditor{blocks: slices.Clone(x.blocks), max: x.max, touched: map[protocol.TimestampBytes]bool{}}
	for i := range fresh {
		ix.account(ts[i], fps[i])
	}
	if err := ix.splitOversized(ctx, s, tx, owner); err != nil {
		return nil, err
	}
	if onNew != nil {
		for _, m := range fresh {
			if err := onNew(ctx, tx, m); err != nil {
				return nil, err
			}
		}
	}
	touched, err := s.touchedRows(ctx, tx, owner, &ix, ts, fps)
	if err != nil {
		return nil, err
	}
	if err := ix.persist(ctx, s, tx, owner, touched); err != nil {
		return nil, err
	}
	return &written{blocks: ix.blocks, max: ix.max, changed: ix.changedStarts(), touched: touched}, nil
}

// written is what writeRows changed: the owner's new blocks and greatest
// timestamp, the starts of blocks whose rows changed, and the rows of the
// touched blocks, cached after commit.
type written struct {
	blocks  []block
	max     protocol.TimestampBytes
	changed []protocol.TimestampBytes
	touched map[protocol.TimestampBytes]*blockRows
}

// batch is the largest number of rows or values one statement carries.
const batch = 256

// freshMessages returns the messages whose timestamps the owner (indexed by
// x) does not have yet (the first of any duplicates in msgs) and their
// change bytes.
func (s *Store) freshMessages(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, x *ownerIndex, msgs []protocol.EncryptedMessage) ([]protocol.EncryptedMessage, int64, error) {
	seen := make(map[protocol.TimestampBytes]bool, len(msgs))
	unique := make([]protocol.EncryptedMessage, 0, len(msgs))
	for _, m := range msgs {
		t := m.Timestamp.Bytes()
		if !seen[t] {
			seen[t] = true
			unique = append(unique, m)
		}
	}
	var exists map[protocol.TimestampBytes]bool
	// Messages all after the owner's greatest timestamp (a push of new
	// changes) cannot exist: no need to look them up.
	if !allAfter(x, unique) {
		var err error
		if exists, err = s.existing(ctx, tx, owner, unique); err != nil {
			return nil, 0, err
		}
	}
	var fresh []protocol.EncryptedMessage
	var added int64
	for _, m := range unique {
		if !exists[m.Timestamp.Bytes()] {
			fresh = append(fresh, m)
			added += int64(len(m.Change))
		}
	}
	return fresh, added, nil
}

// existing returns which of msgs' timestamps the owner has.
func (s *Store) existing(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, msgs []protocol.EncryptedMessage) (map[protocol.TimestampBytes]bool, error) {
	exists := make(map[protocol.TimestampBytes]bool)
	for from := 0; from < len(msgs); from += batch {
		part := msgs[from:min(from+batch, len(msgs))]
		// Pad the list to a power of two with its first value, so a few
		// prepared statements serve every batch.
		n := 1
		for n < len(part) {
			n *= 2
		}
		args := make([]any, 0, n+1)
		args = append(args, owner[:])
		for i := range n {
			t := part[min(i, len(part)-1)].Timestamp.Bytes()
			args = append(args, t[:])
		}
		q := "select t from evolu_change where owner = ? and t in (?" + strings.Repeat(", ?", n-1) + ")"
		st, err := s.TxStmt(ctx, tx, q)
		if err != nil {
			return nil, err
		}
		if err := scanExisting(ctx, st, args, exists); err != nil {
			return nil, err
		}
	}
	return exists, nil
}

func scanExisting(ctx context.Context, st *sql.Stmt, args []any, exists map[protocol.TimestampBytes]bool) error {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("sqlstore: existing timestamps: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return fmt.Errorf("sqlstore: existing timestamps: %w", err)
		}
		var t protocol.TimestampBytes
		copy(t[:], raw)
		exists[t] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: existing timestamps: %w", err)
	}
	return nil
}

// allAfter reports whether every message comes after the greatest
// timestamp of x, so that x has none of them.
func allAfter(x *ownerIndex, msgs []protocol.EncryptedMessage) bool {
	if x.size() == 0 {
		return true
	}
	for _, m := range msgs {
		if m.Timestamp.Bytes().Compare(x.max) <= 0 {
			return false
		}
	}
	return true
}

// insertRows inserts n rows into table ("name (owner, cols...)"): owner,
// bound once per statement as ?1, then cols values per row from row, in
// statements of power-of-two row counts up to batch.
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, table string, owner protocol.OwnerID, cols, n int, row func(i int, args []any) []any) error {
	return s.upsertRows(ctx, tx, table, "", owner, cols, n, row)
}

// upsertRows is insertRows with a suffix after the values (an on conflict
// clause).
func (s *Store) upsertRows(ctx context.Context, tx *sql.Tx, table, suffix string, owner protocol.OwnerID, cols, n int, row func(i int, args []any) []any) error {
	for i := 0; i < n; {
		k := batch
		for k > n-i {
			k /= 2
		}
		var q strings.Builder
		q.WriteString("insert into " + table + " values ")
		for j := range k {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?1" + strings.Repeat(", ?", cols) + ")")
		}
		q.WriteString(suffix)
		st, err := s.TxStmt(ctx, tx, q.String())
		if err != nil {
			return err
		}
		args := make([]any, 0, 1+k*cols)
		args = append(args, owner[:])
		for j := i; j < i+k; j++ {
			args = row(j, args)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("sqlstore: insert into %s: %w", table, err)
		}
		i += k
	}
	return nil
}

// blockEditor applies inserts to a copy of an owner's blocks and records
// which block rows to rewrite and delete.
type blockEditor struct {
	blocks  []block
	max     protocol.TimestampBytes          // greatest timestamp (when blocks exist)
	touched map[protocol.TimestampBytes]bool // starts to upsert
	deleted []protocol.TimestampBytes        // starts that no longer exist
}

// account adds t to its block in memory: the block that starts at or
// before it, or the first block, which then starts at t. Blocks may
// outgrow maxBlock until splitOversized.
func (e *blockEditor) account(t protocol.TimestampBytes, fp protocol.Fingerprint) {
	if len(e.blocks) == 0 {
		e.blocks = append(e.blocks, block{start: t, n: 1, fp: fp})
		e.touched[t] = true
		e.max = t
		return
	}
	if t.Compare(e.max) > 0 {
		e.max = t
		// Appending after a full last block starts a new block, so
		// append-only histories keep full blocks and never read to split.
		if last := len(e.blocks) - 1; e.blocks[last].n >= maxBlock {
			e.blocks = append(e.blocks, block{start: t, n: 1, fp: fp})
			e.touched[t] = true
			return
		}
	}
	k := sort.Search(len(e.blocks), func(k int) bool { return e.blocks[k].start.Compare(t) > 0 }) - 1
	if k < 0 {
		// Before the first block: it now starts at t.
		k = 0
		e.deleted = append(e.deleted, e.blocks[0].start)
		delete(e.touched, e.blocks[0].start)
		e.blocks[0].start = t
	}
	b := &e.blocks[k]
	b.n++
	b.fp = b.fp.Xor(fp)
	e.touched[b.start] = true
}

// splitOversized cuts every block over maxBlock into blocks of about
// 3/4 maxBlock, reading its rows once. The rows inserted in the
// transaction are all accounted for, so a block's rows are exactly its n
// timestamps from its start.
func (e *blockEditor) splitOversized(ctx context.Context, s *Store, tx *sql.Tx, owner protocol.OwnerID) error {
	for k := len(e.blocks) - 1; k >= 0; k-- {
		if e.blocks[k].n <= maxBlock {
			continue
		}
		parts, err := e.split(ctx, s, tx, owner, e.blocks[k])
		if err != nil {
			return err
		}
		e.blocks = slices.Replace(e.blocks, k, k+1, parts...)
		for _, p := range parts {
			e.touched[p.start] = true
		}
	}
	return nil
}

func (e *blockEditor) split(ctx context.Context, s *Store, tx *sql.Tx, owner protocol.OwnerID, b block) ([]block, error) {
	rows, err := tx.QueryContext(ctx, s.rebind(`select t, fp from evolu_change where owner = ? and t >= ? order by t limit ?`), owner[:], b.start[:], b.n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: split: %w", err)
	}
	defer rows.Close()
	pieces := (b.n + maxBlock*3/4 - 1) / (maxBlock * 3 / 4)
	size := (b.n + pieces - 1) / pieces
	var parts []block
	i := 0
	var traw, fraw []byte
	for rows.Next() {
		if err := rows.Scan(&traw, &fraw); err != nil {
			return nil, fmt.Errorf("sqlstore: split: %w", err)
		}
		if i%size == 0 {
			var start protocol.TimestampBytes
			copy(start[:], traw)
			parts = append(parts, block{start: start})
		}
		p := &parts[len(parts)-1]
		var f protocol.Fingerprint
		copy(f[:], fraw)
		p.n++
		p.fp = p.fp.Xor(f)
		i++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: split: %w", err)
	}
	if i != b.n {
		return nil, fmt.Errorf("sqlstore: split: block of %d has %d rows", b.n, i)
	}
	return parts, nil
}

// changedStarts are the starts of the blocks whose rows changed or that no
// longer exist.
func (e *blockEditor) changedStarts() []protocol.TimestampBytes {
	out := slices.Clone(e.deleted)
	for t := range e.touched {
		out = append(out, t)
	}
	return out
}

func (e *blockEditor) persist(ctx context.Context, s *Store, tx *sql.Tx, owner protocol.OwnerID, rows map[protocol.TimestampBytes]*blockRows) error {
	for _, start := range e.deleted {
		if _, err := tx.ExecContext(ctx, s.rebind(`delete from evolu_block where owner = ? and start = ?`), owner[:], start[:]); err != nil {
			return fmt.Errorf("sqlstore: delete block: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`delete from evolu_block_rows where owner = ? and start = ?`), owner[:], start[:]); err != nil {
			return fmt.Errorf("sqlstore: delete block rows: %w", err)
		}
	}
	var touched []block
	for _, b := range e.blocks {
		if e.touched[b.start] {
			touched = append(touched, b)
		}
	}
	err := s.upsertRows(ctx, tx, "evolu_block (owner, start, n, fp)", " on conflict (owner, start) do update set n = excluded.n, fp = excluded.fp",
		owner, 3, len(touched), func(i int, args []any) []any {
			return append(args, touched[i].start[:], touched[i].n, touched[i].fp[:])
		})
	if err != nil {
		return fmt.Errorf("sqlstore: write blocks: %w", err)
	}
	err = s.upsertRows(ctx, tx, "evolu_block_rows (owner, start, rows)", " on conflict (owner, start) do update set rows = excluded.rows",
		owner, 2, len(touched), func(i int, args []any) []any {
			return append(args, touched[i].start[:], rows[touched[i].start].pack())
		})
	if err != nil {
		return fmt.Errorf("sqlstore: write block rows: %w", err)
	}
	return nil
}
