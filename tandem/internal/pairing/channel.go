package pairing

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Pairing channel limits (docs/decisions/tandem-pairing.md).
const (
	maxPairMsgSize = 16 << 10        // hub size of a pairing message (its payloads are under 2 KiB); a larger one is not downloaded
	maxPairBytes   = 16 << 20        // bytes one session downloads from its channel
	pairFetchBatch = 16              // bodies fetched at once (each under maxPairMsgSize when the hub says its size)
	pairPoll       = 2 * time.Second // safety net under Watch
	pairRewatch    = time.Second     // pause before watching again after a broken watch
	pairIOTimeout  = 30 * time.Second
)

// Channel is one side's view of a pairing channel (§5.6: kind-3
// envelopes keyed from P) on a hub connection of its own, outside the sync
// engine. Reads are serialized by its owner; posts may run alongside.
type Channel struct {
	store hub.Store
	p     *suite.Pairing
	log   *slog.Logger

	mu     sync.Mutex // guards what follows
	cursor hub.Cursor
	seen   map[hub.ID]bool // every message of the channel read or posted
	mine   map[hub.ID]bool // posted by this side
	spent  int64           // bytes downloaded (maxPairBytes)
	full   bool            // maxPairBytes reached: logged once
}

func NewChannel(s hub.Store, p [32]byte, log *slog.Logger) *Channel {
	return &Channel{store: s, p: suite.NewPairing(p), log: log, seen: map[hub.ID]bool{}, mine: map[hub.ID]bool{}}
}

// Store is the channel's hub connection.
func (c *Channel) Store() hub.Store { return c.store }

// Pairing is the channel's secret, key and tag (§5.6).
func (c *Channel) Pairing() *suite.Pairing { return c.p }

// Post seals m as a kind-3 envelope of the channel and appends it. A
// failure to write or seal wraps ErrLocal; the hub's errors are returned
// as it gave them.
func (c *Channel) Post(ctx context.Context, m Msg) (hub.ID, error) {
	pt, err := m.Encode()
	if err != nil {
		return "", fmt.Errorf("%w: cannot write a pairing message: %w", ErrLocal, err)
	}
	env, err := suite.SealEnvelope(suite.KindRequest, c.p.Key, c.p.Tag, pt, rand.Reader)
	if err != nil {
		return "", fmt.Errorf("%w: cannot seal a pairing message: %w", ErrLocal, err)
	}
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	id, err := c.store.Append(ctx, c.p.Tag, env)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[id], c.mine[id] = true, true
	return id, nil
}

// destroyMine removes the messages this side posted (best effort).
func (c *Channel) destroyMine(ctx context.Context) {
	c.mu.Lock()
	var ids []hub.ID
	for id := range c.mine {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	c.destroyIDs(ctx, ids)
}

// destroyIDs removes the given messages of the channel (best effort); they
// are no longer counted as this side's.
func (c *Channel) destroyIDs(ctx context.Context, ids []hub.ID) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	c.mu.Lock()
	for _, id := range ids {
		delete(c.mine, id)
	}
	c.mu.Unlock()
	if err := c.store.Destroy(ctx, ids); err != nil {
		c.log.Info("pairing: messages left on the hub", "n", len(ids), "err", err)
	}
}

// read returns the channel's messages that arrived since the last read,
// posted by the other side or anyone else holding P. Messages that do not
// open or parse are logged and skipped: anyone who saw the QR code can post
// here (§6.3).
func (c *Channel) read(ctx context.Context) ([]Msg, error) {
	c.mu.Lock()
	cur := c.cursor
	c.mu.Unlock()
	ch, err := c.store.Changes(ctx, cur)
	if err != nil {
		return nil, err
	}
	ids, sizes := c.fresh(ch.Added)
	var out []Msg
	for len(ids) > 0 {
		batch := ids[:min(len(ids), pairFetchBatch)]
		ids = ids[len(batch):]
		bodies, err := c.store.Fetch(ctx, batch)
		if err != nil {
			c.unsee(append(batch, ids...)) // read them again next time
			return out, err
		}
		for _, b := range bodies {
			c.charge(int64(len(b.Envelope)) - sizes[b.ID]) // what the size Changes gave did not cover
			if m, ok := c.Open(b); ok {
				m.ID = b.ID
				out = append(out, m)
			}
		}
	}
	c.mu.Lock()
	c.cursor = ch.Cursor
	c.mu.Unlock()
	return out, nil
}

// fresh marks the channel's messages not seen before as seen and returns
// those worth downloading. Anyone who saw the QR code can post here, so
// the channel is read whole (junk never hides the real messages behind a
// count), bounded instead by bytes: a message the hub says is larger than
// any pairing message is passed over without being downloaded, and a
// session downloads at most maxPairBytes. Its time is bounded by the
// offer's lifetime (§6.3: 120 s).
func (c *Channel) fresh(added []hub.Added) ([]hub.ID, map[hub.ID]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []hub.ID
	sizes := map[hub.ID]int64{}
	for _, a := range added {
		if a.Channel != c.p.Tag || c.seen[a.ID] {
			continue
		}
		c.seen[a.ID] = true
		switch {
		case a.Size > maxPairMsgSize:
			c.log.Debug("pairing: channel: a message too large to be a pairing message, not downloaded", "id", a.ID, "size", a.Size)
			continue
		case c.spent+max(a.Size, 0) > maxPairBytes:
			if !c.full {
				c.full = true
				c.log.Warn("pairing: channel flooded; further messages ignored", "limit bytes", maxPairBytes)
			}
			continue
		}
		c.spent += max(a.Size, 0)
		sizes[a.ID] = max(a.Size, 0)
		ids = append(ids, a.ID)
	}
	return ids, sizes
}

// charge counts n more downloaded bytes against maxPairBytes.
func (c *Channel) charge(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.spent += n
	c.mu.Unlock()
}

func (c *Channel) unsee(ids []hub.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.seen, id)
	}
}

// Open reads one fetched message of the channel; one that does not open
// or parse is logged and reported not ok.
func (c *Channel) Open(b hub.Body) (Msg, bool) {
	if b.Err != nil {
		return Msg{}, false
	}
	kind, pt, err := suite.OpenEnvelope(c.p.Key, c.p.Tag, b.Envelope)
	if err == nil && kind != suite.KindRequest {
		err = errors.New("not a kind-3 envelope")
	}
	var m Msg
	if err == nil {
		m, err = ParseMsg(pt)
	}
	if err != nil {
		c.log.Warn("pairing: message ignored", "id", b.ID, "err", err)
		return Msg{}, false
	}
	return m, true
}

// wait reads the channel until step reports done or fails, or until the
// deadline (errDeadline) or ctx ends. It watches the hub meanwhile and
// reads again on every notification, and every pairPoll in any case. The
// channel is read at least once, even past the deadline.
// A read that fails is retried; if the last one failed when time runs
// out, its error is returned instead. Its watch goroutine has ended when
// wait returns.
func (c *Channel) wait(ctx context.Context, until time.Time, step func([]Msg) (bool, error)) error {
	wctx, stop := context.WithDeadline(ctx, until)
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() { defer close(done); c.watch(wctx, kick) }()
	defer func() { stop(); <-done }()
	tick := time.NewTicker(pairPoll)
	defer tick.Stop()
	var lastErr error
	for {
		msgs, err := c.readFor(ctx)
		switch {
		case errors.Is(err, hub.ErrAuth):
			return err
		case err != nil && ctx.Err() == nil:
			c.log.Info("pairing: reading the channel failed; trying again", "err", err)
		}
		lastErr = err
		if ok, err := step(msgs); ok || err != nil {
			return err
		}
		select {
		case <-wctx.Done():
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case lastErr != nil && !errors.Is(lastErr, context.DeadlineExceeded):
				return lastErr
			}
			return errDeadline
		case <-kick:
		case <-tick.C:
		}
	}
}

// readFor is read bounded by pairIOTimeout, not by the wait's deadline:
// what arrived before the deadline is read even after it.
func (c *Channel) readFor(ctx context.Context) ([]Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	return c.read(ctx)
}

// watch calls Watch until ctx ends, signalling kick at every change.
func (c *Channel) watch(ctx context.Context, kick chan struct{}) {
	signal := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		if err := c.store.Watch(ctx, signal); err != nil && ctx.Err() == nil {
			c.log.Debug("pairing: watch ended; watching again", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pairRewatch):
		}
	}
}

// destroy removes the channel's messages this side knows of, except
// keep, within a short deadline (best effort: a message left behind is
// unreadable without P and is never fetched by the sync engine).
func (c *Channel) destroy(ctx context.Context, keep map[hub.ID]bool) {
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	all := map[hub.ID]bool{}
	c.mu.Lock()
	for id := range c.seen {
		all[id] = true
	}
	cur := c.cursor
	c.mu.Unlock()
	if ch, err := c.store.Changes(ctx, cur); err == nil { // messages that arrived since the last read
		for _, a := range ch.Added {
			if a.Channel == c.p.Tag {
				all[a.ID] = true
			}
		}
	}
	var ids []hub.ID
	for id := range all {
		if !keep[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	if err := c.store.Destroy(ctx, ids); err != nil {
		c.log.Info("pairing: messages left on the hub", "n", len(ids), "err", err)
	}
}
