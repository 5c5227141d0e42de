package devstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Meta keys.
const (
	KeyDeviceID = "device_id"
	KeyHLC      = "hlc"
	KeyCursor   = "cursor"
	KeyUID      = "uid"
	KeyHub      = "hub"
	KeyLastSync = "last_sync"
)

// Commit stores ds, in order, in one transaction (client.Journal).
func (s *DB) Commit(ds ...*client.Delta) error {
	ctx := context.Background() // a commit is never abandoned half-way
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("devstore: commit: %w", err)
	}
	defer tx.Rollback()
	for _, d := range ds {
		if err := commitDelta(ctx, tx, d); err != nil {
			return fmt.Errorf("devstore: commit: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("devstore: commit: %w", err)
	}
	return nil
}

func commitDelta(ctx context.Context, tx *sql.Tx, d *client.Delta) error {
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	if len(d.Writes) > 0 {
		// A plain append (schema 5): a write stored before gets a later
		// row, which Prune keeps. A write listed twice here is stored once,
		// as its last listing: the copy that replaced the earlier one.
		stmt, err := tx.PrepareContext(ctx, "INSERT INTO writes(wid, scope, stored, crc) VALUES(?, ?, ?, ?)")
		if err != nil {
			return err
		}
		defer stmt.Close()
		var b []byte
		last := make(map[[32]byte]int, len(d.Writes))
		for i, w := range d.Writes {
			last[w.ID()] = i
		}
		for i, w := range d.Writes {
			id, scope := w.ID(), w.Body().Scope
			if last[id] != i {
				continue
			}
			b = record.AppendStored(b[:0], w)
			if _, err := stmt.ExecContext(ctx, id[:], scope[:], b, rowSum(id, scope, b)); err != nil {
				return err
			}
		}
	}
	for _, st := range d.Statements {
		if err := exec("INSERT INTO statements(coll, origin, payload) VALUES(?, ?, ?)", st.Collection[:], st.Origin[:], st.Payload); err != nil {
			return err
		}
	}
	for _, f := range d.Fragments {
		if err := exec("INSERT INTO fragments(coll, payload) VALUES(?, ?)", f.Collection[:], f.Payload); err != nil {
			return err
		}
	}
	if len(d.Msgs) > 0 {
		stmt, err := tx.PrepareContext(ctx, "INSERT INTO msgs(id, channel, state, hash, kind, rec, writes, size, first_seen) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET state = excluded.state, hash = excluded.hash, kind = excluded.kind, rec = excluded.rec, writes = excluded.writes, size = excluded.size, first_seen = excluded.first_seen")
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, m := range d.Msgs {
			if _, err := stmt.ExecContext(ctx, string(m.ID), m.Channel, int(m.State), m.Hash[:], int(m.Kind), m.Rec[:], m.Writes, m.Size, unixMilli(m.FirstSeen)); err != nil {
				return err
			}
		}
	}
	for _, id := range d.Gone {
		if err := exec("DELETE FROM msgs WHERE id = ?", string(id)); err != nil {
			return err
		}
		if err := exec("DELETE FROM held WHERE id = ?", string(id)); err != nil {
			return err
		}
	}
	for _, o := range d.OutAdd {
		if err := exec("INSERT INTO outbox(seq, channel, envelope, rec, dirty, kind, writes, auto, crc) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)", int64(o.Seq), o.Channel, o.Envelope, o.Rec[:], o.Dirty, int(o.Kind), o.Writes, o.Auto, outSum(&o)); err != nil {
			return err
		}
	}
	for _, seq := range d.OutDel {
		if err := exec("DELETE FROM outbox WHERE seq = ?", int64(seq)); err != nil {
			return err
		}
	}
	for _, h := range d.HeldAdd {
		if err := exec("INSERT OR REPLACE INTO held(id, channel, envelope, first_seen) VALUES(?, ?, ?, ?)", string(h.ID), h.Channel, h.Envelope, h.FirstSeen.UnixMilli()); err != nil {
			return err
		}
	}
	for _, id := range d.HeldDel {
		if err := exec("DELETE FROM held WHERE id = ?", string(id)); err != nil {
			return err
		}
	}
	for _, r := range d.Rotations {
		if err := exec("INSERT INTO rotations(coll, step, payload, key, inventory, old_epoch, old_key) VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(coll) DO UPDATE SET step = excluded.step",
			r.Collection[:], r.Step, r.Payload, r.Key[:], r.Inventory, r.OldEpoch[:], r.OldKey[:]); err != nil {
			return err
		}
	}
	for _, c := range d.RotationsDone {
		if err := exec("DELETE FROM rotations WHERE coll = ?", c[:]); err != nil {
			return err
		}
	}
	if d.CursorSet && d.Cursor == nil {
		if err := exec("DELETE FROM meta WHERE k = ?", KeyCursor); err != nil {
			return err
		}
	} else if d.CursorSet {
		if err := exec("INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", KeyCursor, []byte(d.Cursor)); err != nil {
			return err
		}
	}
	return exec("INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", KeyHLC, EncodeHLC(d.HLC))
}

// EncodeHLC is an HLC as meta bytes: u64(millis) || u16(counter).
func EncodeHLC(h suite.HLC) []byte {
	b := binary.BigEndian.AppendUint64(nil, h.Millis)
	return binary.BigEndian.AppendUint16(b, h.Counter)
}

// DecodeHLC reads EncodeHLC's bytes; nil gives the zero HLC.
func DecodeHLC(b []byte) (suite.HLC, error) {
	switch len(b) {
	case 0:
		return suite.HLC{}, nil
	case 10:
		return suite.HLC{Millis: binary.BigEndian.Uint64(b), Counter: binary.BigEndian.Uint16(b[8:])}, nil
	}
	return suite.HLC{}, fmt.Errorf("devstore: stored clock of %d bytes", len(b))
}

// Source returns the database as a client.Source for Device.Restore.
func (s *DB) Source() client.Source { return &source{db: s.db} }

type source struct {
	db         *sql.DB
	damaged    [][32]byte // writes whose rows failed their checksum (integrity.go)
	damagedOut []uint64   // outbox entries whose rows failed theirs
}

func (r *source) Cursor(ctx context.Context) (hub.Cursor, error) {
	var v []byte
	err := r.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = ?", KeyCursor).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return v, err
}

// each runs q and calls fn with each row's scanner.
func (r *source) each(ctx context.Context, q string, args []any, fn func(*sql.Rows) error) error {
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (r *source) Writes(ctx context.Context, scope [16]byte, fn func([]byte, [32]byte) error) error {
	var a arena
	return r.each(ctx, "SELECT wid, stored, crc FROM writes WHERE scope = ?", []any{scope[:]}, func(rows *sql.Rows) error {
		var id, b, sum sql.RawBytes
		if err := rows.Scan(&id, &b, &sum); err != nil {
			return err
		}
		if len(id) != 32 {
			return fmt.Errorf("devstore: write id of %d bytes", len(id))
		}
		if !r.intact([32]byte(id), scope, b, sum) {
			return nil
		}
		return fn(a.keep(b), [32]byte(id))
	})
}

func (r *source) OtherWrites(ctx context.Context, not [16]byte, fn func([16]byte, []byte, [32]byte) error) error {
	// One column per row, scope || wid || stored, checked in the query:
	// the driver's cost is per column, and this is the longest read of a
	// reopening (docs/benchmarks/tandem-device.md).
	var a arena
	const q = "SELECT CASE WHEN length(scope) = 16 AND length(wid) = 32 THEN scope || wid || ifnull(crc, x'0000000000') || stored END FROM writes NOT INDEXED WHERE scope != ?"
	return r.each(ctx, q, []any{not[:]}, func(rows *sql.Rows) error {
		var row sql.RawBytes
		if err := rows.Scan(&row); err != nil {
			return err
		}
		if len(row) < 48+sumLen {
			return fmt.Errorf("devstore: malformed write row")
		}
		scope, id, b := [16]byte(row[:16]), [32]byte(row[16:48]), row[48+sumLen:]
		if !r.intact(id, scope, b, row[48:48+sumLen]) {
			return nil
		}
		return fn(scope, a.keep(b), id)
	})
}

// arena copies the stored bytes of many rows into few large allocations:
// a device keeps every write it loads, so one allocation per row only
// costs time (reopening reads 100,000 of them).
type arena struct{ buf []byte }

const arenaChunk = 256 << 10

// keep returns a copy of b that outlives the row it came from.
func (a *arena) keep(b []byte) []byte {
	if len(b) > arenaChunk/8 {
		c := make([]byte, len(b))
		copy(c, b)
		return c
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, arenaChunk)
	}
	n := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

func (r *source) Statements(ctx context.Context, fn func(client.SavedStatement) error) error {
	return r.each(ctx, "SELECT coll, origin, payload FROM statements ORDER BY seq", nil, func(rows *sql.Rows) error {
		var c, o, p []byte
		if err := rows.Scan(&c, &o, &p); err != nil {
			return err
		}
		if len(c) != 16 || len(o) != 32 {
			return fmt.Errorf("devstore: malformed statement row")
		}
		return fn(client.SavedStatement{Collection: client.CollectionID(c), Origin: [32]byte(o), Payload: p})
	})
}

func (r *source) Fragments(ctx context.Context, fn func(client.SavedFragment) error) error {
	return r.each(ctx, "SELECT coll, payload FROM fragments ORDER BY seq", nil, func(rows *sql.Rows) error {
		var c, p []byte
		if err := rows.Scan(&c, &p); err != nil {
			return err
		}
		if len(c) != 16 {
			return fmt.Errorf("devstore: malformed fragment row")
		}
		return fn(client.SavedFragment{Collection: client.CollectionID(c), Payload: p})
	})
}

func (r *source) Msgs(ctx context.Context, fn func(client.SavedMsg) error) error {
	return r.each(ctx, "SELECT id, channel, state, hash, kind, rec, writes, size, first_seen FROM msgs ORDER BY rowid", nil, func(rows *sql.Rows) error {
		var id, ch string
		var st, kind int
		var h, rec, ws []byte
		var size, seen int64
		if err := rows.Scan(&id, &ch, &st, &h, &kind, &rec, &ws, &size, &seen); err != nil {
			return err
		}
		m := client.SavedMsg{ID: hub.ID(id), Channel: ch, State: client.MsgState(st), Kind: uint8(kind), Writes: ws, Size: size}
		if seen != 0 {
			m.FirstSeen = time.UnixMilli(seen)
		}
		copy(m.Hash[:], h)
		copy(m.Rec[:], rec)
		return fn(m)
	})
}

func (r *source) Outbox(ctx context.Context, fn func(client.SavedOut) error) error {
	return r.each(ctx, "SELECT seq, channel, envelope, rec, dirty, kind, writes, auto, crc FROM outbox ORDER BY seq", nil, func(rows *sql.Rows) error {
		var o client.SavedOut
		var seq int64
		var kind int
		var rec, sum []byte
		if err := rows.Scan(&seq, &o.Channel, &o.Envelope, &rec, &o.Dirty, &kind, &o.Writes, &o.Auto, &sum); err != nil {
			return err
		}
		o.Seq, o.Kind = uint64(seq), uint8(kind)
		copy(o.Rec[:], rec)
		if !r.outIntact(&o, len(rec), sum) {
			return nil
		}
		return fn(o)
	})
}

func (r *source) Held(ctx context.Context, fn func(client.SavedHeld) error) error {
	return r.each(ctx, "SELECT id, channel, envelope, first_seen FROM held ORDER BY rowid", nil, func(rows *sql.Rows) error {
		var h client.SavedHeld
		var id string
		var ms int64
		if err := rows.Scan(&id, &h.Channel, &h.Envelope, &ms); err != nil {
			return err
		}
		h.ID, h.FirstSeen = hub.ID(id), time.UnixMilli(ms)
		return fn(h)
	})
}

func (r *source) Rotations(ctx context.Context, fn func(client.SavedRotation) error) error {
	return r.each(ctx, "SELECT coll, step, payload, key, inventory, old_epoch, old_key FROM rotations", nil, func(rows *sql.Rows) error {
		var c, k, oe, ok []byte
		var s client.SavedRotation
		if err := rows.Scan(&c, &s.Step, &s.Payload, &k, &s.Inventory, &oe, &ok); err != nil {
			return err
		}
		if len(c) != 16 || len(k) != 32 || len(oe) != 32 || len(ok) != 32 {
			return fmt.Errorf("devstore: malformed rotation row")
		}
		s.Collection, s.Key, s.OldEpoch, s.OldKey = client.CollectionID(c), [32]byte(k), [32]byte(oe), [32]byte(ok)
		return fn(s)
	})
}

// WriteRows returns how many rows the writes table holds: kept writes,
// writes superseded since they were stored, and earlier rows of writes
// stored again, until Prune. Counting costs well under a millisecond for
// 100,000 rows (SQLite counts the scope index).
func (s *DB) WriteRows(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM writes").Scan(&n)
	return n, err
}

// Prune deletes the stored writes that keep (the write IDs the device's
// states hold) does not list, superseded since they were stored, and every
// row of a write stored again but its latest (schema 5: a write stored
// again, with a smaller signature or after its row was found damaged,
// gets a later row). It returns how many rows it deleted. Rows stored
// while it runs are left as they are.
func (s *DB) Prune(ctx context.Context, keep func(id [32]byte) bool) (int, error) {
	var drop []int64
	rows, err := s.db.QueryContext(ctx, "SELECT seq, wid FROM writes ORDER BY seq DESC")
	if err != nil {
		return 0, err
	}
	latest := map[[32]byte]struct{}{}
	for rows.Next() {
		var seq int64
		var id sql.RawBytes
		if err := rows.Scan(&seq, &id); err != nil {
			rows.Close()
			return 0, err
		}
		if len(id) != 32 || !keep([32]byte(id)) {
			drop = append(drop, seq)
			continue
		}
		if _, later := latest[[32]byte(id)]; later {
			drop = append(drop, seq)
			continue
		}
		latest[[32]byte(id)] = struct{}{}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(drop) == 0 {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, "DELETE FROM writes WHERE seq = ?")
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	for _, seq := range drop {
		if _, err := stmt.ExecContext(ctx, seq); err != nil {
			return 0, err
		}
	}
	return len(drop), tx.Commit()
}

// unixMilli is t in Unix milliseconds, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
