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
)

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
	for {
		err := d.watchAndSync(ctx, kick, signal)
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
func (d *Device) watchAndSync(ctx context.Context, kick chan struct{}, signal func()) error {
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
	poll := time.NewTimer(pollEvery)
	defer poll.Stop()
	for now := false; ; {
		if now {
			if _, err := d.Sync(ctx); err != nil {
				if synced {
					return errors.Join(errSynced, err)
				}
				return err
			}
			synced, now = true, false
			poll.Reset(pollEvery)
		}
		local := d.localEdits()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-kick:
			now = true
		case <-local:
			now = true
		case <-poll.C:
			now = true
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
