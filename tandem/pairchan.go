package tandem

import (
	"context"
	"crypto/rand"
	"errors"
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

// errPairDeadline ends a wait that reached its deadline.
var errPairDeadline = errors.New("tandem: pairing deadline reached")

// pairChannel is one side's view of a pairing channel (§5.6: kind-3
// envelopes keyed from P) on a hub connection of its own, outside the sync
// engine. Reads are serialized by its owner; posts may run alongside.
type pairChannel struct {
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

func newPairChannel(s hub.Store, p [32]byte, log *slog.Logger) *pairChannel {
	return &pairChannel{store: s, p: suite.NewPairing(p), log: log, seen: map[hub.ID]bool{}, mine: map[hub.ID]bool{}}
}

// openPairStore opens a hub connection for a pairing session: the app's
// own binding when given, else the hub descriptor.
func openPairStore(ctx context.Context, opts Options, h Hub) (hub.Store, error) {
	var s hub.Store
	var err error
	switch {
	case opts.Store != nil:
		s, err = opts.Store(ctx)
	case h.IsZero():
		return nil, newErr(CodeNoHub, nil, "no sync hub is connected yet: connect one first")
	default:
		s, err = h.open(ctx, budgetOf(opts), opts.RootCAs)
	}
	if err != nil {
		return nil, pairHubErr(err)
	}
	if err := s.EnsureFolder(ctx); err != nil {
		s.Close()
		return nil, pairHubErr(err)
	}
	return s, nil
}

// pairHubErr turns a hub error into an *Error, as Sync does.
func pairHubErr(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, hub.ErrAuth):
		return newErr(CodeAuth, err, msgAuth)
	case offline(err):
		return newErr(CodeOffline, err, msgOffline)
	}
	return newErr(CodeOffline, err, "the sync hub gave an answer Ferry can't use: try again")
}

// post seals m as a kind-3 envelope of the channel and appends it.
func (c *pairChannel) post(ctx context.Context, m pairMsg) (hub.ID, error) {
	pt, err := m.encode()
	if err != nil {
		return "", newErr(CodeInternal, err, "cannot write a pairing message")
	}
	env, err := suite.SealEnvelope(suite.KindRequest, c.p.Key, c.p.Tag, pt, rand.Reader)
	if err != nil {
		return "", newErr(CodeInternal, err, "cannot seal a pairing message")
	}
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	id, err := c.store.Append(ctx, c.p.Tag, env)
	if err != nil {
		return "", pairHubErr(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[id], c.mine[id] = true, true
	return id, nil
}

// destroyMine removes the messages this side posted (best effort).
func (c *pairChannel) destroyMine(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	c.mu.Lock()
	var ids []hub.ID
	for id := range c.mine {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := c.store.Destroy(ctx, ids); err != nil {
		c.log.Info("tandem: pairing messages left on the hub", "n", len(ids), "err", err)
	}
}

// read returns the channel's messages that arrived since the last read,
// posted by the other side or anyone else holding P. Messages that do not
// open or parse are logged and skipped: anyone who saw the QR code can post
// here (§6.3).
func (c *pairChannel) read(ctx context.Context) ([]pairMsg, error) {
	c.mu.Lock()
	cur := c.cursor
	c.mu.Unlock()
	ch, err := c.store.Changes(ctx, cur)
	if err != nil {
		return nil, err
	}
	ids, sizes := c.fresh(ch.Added)
	var out []pairMsg
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
			if m, ok := c.open(b); ok {
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
func (c *pairChannel) fresh(added []hub.Added) ([]hub.ID, map[hub.ID]int64) {
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
			c.log.Debug("tandem: pairing channel: a message too large to be a pairing message, not downloaded", "id", a.ID, "size", a.Size)
			continue
		case c.spent+max(a.Size, 0) > maxPairBytes:
			if !c.full {
				c.full = true
				c.log.Warn("tandem: pairing channel flooded; further messages ignored", "limit bytes", maxPairBytes)
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
func (c *pairChannel) charge(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.spent += n
	c.mu.Unlock()
}

func (c *pairChannel) unsee(ids []hub.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.seen, id)
	}
}

func (c *pairChannel) open(b hub.Body) (pairMsg, bool) {
	if b.Err != nil {
		return pairMsg{}, false
	}
	kind, pt, err := suite.OpenEnvelope(c.p.Key, c.p.Tag, b.Envelope)
	if err == nil && kind != suite.KindRequest {
		err = errors.New("not a kind-3 envelope")
	}
	var m pairMsg
	if err == nil {
		m, err = parsePairMsg(pt)
	}
	if err != nil {
		c.log.Warn("tandem: pairing message ignored", "id", b.ID, "err", err)
		return pairMsg{}, false
	}
	return m, true
}

// wait reads the channel until step reports done or fails, or until the
// deadline (errPairDeadline) or ctx ends. It watches the hub meanwhile and
// reads again on every notification, and every pairPoll in any case. The
// channel is read at least once, even past the deadline.
// A read that fails is retried; if the last one failed when time runs
// out, its error is returned instead. Its watch goroutine has ended when
// wait returns.
func (c *pairChannel) wait(ctx context.Context, until time.Time, step func([]pairMsg) (bool, error)) error {
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
			return pairHubErr(err)
		case err != nil && ctx.Err() == nil:
			c.log.Info("tandem: reading the pairing channel failed; trying again", "err", err)
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
				return pairHubErr(lastErr)
			}
			return errPairDeadline
		case <-kick:
		case <-tick.C:
		}
	}
}

// readFor is read bounded by pairIOTimeout, not by the wait's deadline:
// what arrived before the deadline is read even after it.
func (c *pairChannel) readFor(ctx context.Context) ([]pairMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, pairIOTimeout)
	defer cancel()
	return c.read(ctx)
}

// watch calls Watch until ctx ends, signalling kick at every change.
func (c *pairChannel) watch(ctx context.Context, kick chan struct{}) {
	signal := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		if err := c.store.Watch(ctx, signal); err != nil && ctx.Err() == nil {
			c.log.Debug("tandem: pairing watch ended; watching again", "err", err)
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
func (c *pairChannel) destroy(ctx context.Context, keep map[hub.ID]bool) {
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
		c.log.Info("tandem: pairing messages left on the hub", "n", len(ids), "err", err)
	}
}
