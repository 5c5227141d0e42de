package purestore

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// Source returns the store as a client.Source for Device.Restore. It reads
// the rows as they are when each method is called.
func (s *DB) Source() client.Source { return source{s} }

type source struct{ s *DB }

var _ client.Source = source{}

// rows calls fn with each row of table tb in its order, holding the lock
// only to copy the rows out (fn may take long).
func (r source) rows(tb byte, byKey bool, fn func(key string, val []byte) error) error {
	r.s.mu.Lock()
	t := r.s.ts[tb]
	keys := t.ordered(byKey)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = t.rows[k].val
	}
	r.s.mu.Unlock()
	for i, k := range keys {
		if err := fn(k, vals[i]); err != nil {
			return err
		}
	}
	return nil
}

func (r source) Cursor(ctx context.Context) (hub.Cursor, error) {
	v, err := r.s.Meta(ctx, devstore.KeyCursor)
	if v == nil {
		return nil, err
	}
	return hub.Cursor(v), err
}

func (r source) Writes(_ context.Context, scope [16]byte, fn func([]byte, [32]byte) error) error {
	return r.rows(tWrites, false, func(k string, v []byte) error {
		if len(k) != 32 || len(v) < 16 {
			return errMalformed
		}
		if [16]byte(v[:16]) != scope {
			return nil
		}
		return fn(v[16:], [32]byte([]byte(k)))
	})
}

func (r source) OtherWrites(_ context.Context, not [16]byte, fn func([16]byte, []byte, [32]byte) error) error {
	return r.rows(tWrites, false, func(k string, v []byte) error {
		if len(k) != 32 || len(v) < 16 {
			return errMalformed
		}
		if [16]byte(v[:16]) == not {
			return nil
		}
		return fn([16]byte(v[:16]), v[16:], [32]byte([]byte(k)))
	})
}

func (r source) Statements(_ context.Context, fn func(client.SavedStatement) error) error {
	return r.rows(tStatements, true, func(_ string, v []byte) error {
		var st client.SavedStatement
		c := cols{b: v}
		c.fixed(st.Collection[:])
		c.fixed(st.Origin[:])
		st.Payload = c.next()
		if err := c.done(); err != nil {
			return err
		}
		return fn(st)
	})
}

func (r source) Fragments(_ context.Context, fn func(client.SavedFragment) error) error {
	return r.rows(tFragments, true, func(_ string, v []byte) error {
		var f client.SavedFragment
		c := cols{b: v}
		c.fixed(f.Collection[:])
		f.Payload = c.next()
		if err := c.done(); err != nil {
			return err
		}
		return fn(f)
	})
}

func (r source) Msgs(_ context.Context, fn func(client.SavedMsg) error) error {
	return r.rows(tMsgs, false, func(k string, v []byte) error {
		m, err := decodeMsg(k, v)
		if err != nil {
			return err
		}
		return fn(m)
	})
}

func (r source) Outbox(_ context.Context, fn func(client.SavedOut) error) error {
	return r.rows(tOutbox, true, func(k string, v []byte) error {
		if len(k) != 8 {
			return errMalformed
		}
		o, err := decodeOut(binary.BigEndian.Uint64([]byte(k)), v)
		if err != nil {
			return err
		}
		return fn(o)
	})
}

func (r source) Held(_ context.Context, fn func(client.SavedHeld) error) error {
	return r.rows(tHeld, false, func(k string, v []byte) error {
		h := client.SavedHeld{ID: hub.ID(k)}
		c := cols{b: v}
		h.Channel = string(c.next())
		h.Envelope = c.next()
		h.FirstSeen = time.UnixMilli(int64(c.uint()))
		if err := c.done(); err != nil {
			return err
		}
		return fn(h)
	})
}

func (r source) Rotations(_ context.Context, fn func(client.SavedRotation) error) error {
	return r.rows(tRotations, false, func(k string, v []byte) error {
		rot, err := decodeRotation([]byte(k), v)
		if err != nil {
			return err
		}
		return fn(rot)
	})
}
