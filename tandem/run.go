package tandem

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Reconnection backoff of Run: from backoffMin, doubling to backoffMax,
// each wait drawn at random from its upper half (jitter), so that devices
// that lost the hub together do not return together.
const (
	backoffMin = time.Second
	backoffMax = 5 * time.Minute
	// pollEvery is Run's safety net: a sync this often even when the watch
	// reports nothing (a server whose push silently stopped).
	pollEvery = 5 * time.Minute
	// pollFast is Run's poll while pushes have proved unreliable: a sync
	// not started by a notification found changes on the hub (for example
	// Cyrus does not tell an IMAP IDLE of a message appended over JMAP).
	// quietPolls fast polls in a row that find nothing make Run trust the
	// notifications again. docs/decisions/tandem-run-poll.md.
	pollFast   = 30 * time.Second
	quietPolls = 10
)

// Why Run syncs.
const (
	byPush  = iota // the watch reported a change
	byLocal        // this device wrote
	byPoll         // the poll timer fired
)

// pollState is how often Run polls: every pollEvery, or every pollFast
// once a change arrived that no notification announced, until quietPolls
// fast polls in a row find nothing. It outlives reconnects.
type pollState struct {
	slow, fast time.Duration
	unreliable bool
	quiet      int
}

func (p *pollState) every() time.Duration {
	if p.unreliable {
		return p.fast
	}
	return p.slow
}

// after records what one sync, started for cause, applied from the hub.
// It reports whether the poll interval changed.
func (p *pollState) after(cause, applied int) bool {
	was := p.unreliable
	switch {
	case applied > 0 && (cause == byLocal || cause == byPoll):
		p.unreliable, p.quiet = true, 0
	case cause == byPoll && p.unreliable:
		if p.quiet++; p.quiet >= quietPolls {
			p.unreliable, p.quiet = false, 0
		}
	}
	return was != p.unreliable
}

// Run keeps the device in sync until ctx ends (§1.1: changes appear
// within seconds, push, not polling): it watches the hub (IMAP IDLE, JMAP
// EventSource or polling, §10.2, §10.3), syncs on every notification,
// after every reconnect and whenever this device writes, and reconnects
// with backoff and jitter when the hub goes away. Status tells the app
// whether it is online and when it last synced. A hub that is down never
// stops Run; a refused credential does, with an *Error of CodeAuth whose
// Message is the §13.3 sentence. Run returns nil when ctx ends; it starts
// no goroutine that outlives it. docs/decisions/tandem-run.md.
func (d *Device) Run(ctx context.Context) error {
	kick := make(chan struct{}, 1)
	signal := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	backoff := backoffMin
	poll := &pollState{slow: pollEvery, fast: pollFast}
	if d.pollTest != nil {
		poll.slow, poll.fast = d.pollTest[0], d.pollTest[1]
	}
	for {
		err := d.watchAndSync(ctx, kick, signal, poll)
		switch {
		case ctx.Err() != nil || d.isClosed():
			return nil
		case CodeOf(err) == CodeAuth, CodeOf(err) == CodeNoHub, CodeOf(err) == CodeStorage:
			return err
		case errors.Is(err, errSynced):
			backoff = backoffMin // it worked for a while: start again from the bottom
		}
		d.log.Info("tandem: hub connection lost; reconnecting", "in", backoff, "err", err)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, backoffMax)
	}
}

// errSynced wraps the error that ended a watch after at least one
// successful sync.
var errSynced = errors.New("synced before the connection was lost")

// watchAndSync connects, watches the hub and syncs until the connection
// breaks or ctx ends. Its watch goroutine has ended when it returns.
func (d *Device) watchAndSync(ctx context.Context, kick chan struct{}, signal func(), polls *pollState) error {
	s, err := d.connect(ctx)
	if err != nil {
		return d.failed(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Watch(wctx, signal) }()
	defer func() {
		stop()
		if done != nil {
			<-done
		}
	}()
	d.setWatching(true)
	defer d.setWatching(false)
	synced := false
	poll := time.NewTimer(polls.every())
	defer poll.Stop()
	for cause := -1; ; {
		if cause >= 0 {
			rep, err := d.Sync(ctx)
			if err != nil {
				if synced {
					return errors.Join(errSynced, err)
				}
				return err
			}
			if synced && polls.after(cause, rep.Applied) {
				d.log.Info("tandem: notifications from the hub missed a change; polling more often until they prove reliable", "fast", polls.unreliable, "every", polls.every())
			}
			synced, cause = true, -1
			poll.Reset(polls.every())
		}
		local := d.localEdits()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-kick:
			cause = byPush
		case <-local:
			cause = byLocal
		case <-poll.C:
			cause = byPoll
		case err := <-done:
			done = nil
			d.dropStore()
			if err == nil {
				err = errors.New("watch ended")
			}
			if synced {
				return errors.Join(errSynced, d.failed(err))
			}
			return d.failed(err)
		}
	}
}

func (d *Device) setWatching(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.watching = on
}

// dropStore closes the hub connection so the next use dials again.
func (d *Device) dropStore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store != nil {
		d.store.Close()
		d.store = nil
	}
}

// localEdits returns a channel closed at the next local edit.
func (d *Device) localEdits() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.local
}

func (d *Device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}
