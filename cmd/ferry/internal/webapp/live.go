package webapp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/tandem"
)

// tick is how often the app looks at the device's status and at other
// ferry commands asking for the profile (as sync --watch does).
const tick = 200 * time.Millisecond

// errBusy is returned while another ferry command has the profile.
var errBusy = errors.New("another ferry command is using this profile")

// live owns the profile's device while the app runs: it opens it, runs
// it (tandem's Run), tells the pages of every change, and closes it while
// another ferry command asks for the profile (docs/decisions/app-web.md).
type live struct {
	dir string
	log *slog.Logger

	mu   sync.RWMutex // held for reading while a request uses the device, for writing to close it
	prof *tandemcli.Profile

	bmu     sync.Mutex
	wake    chan struct{} // closed at the next change
	version uint64
	runErr  error         // why Run stopped (a refused credential), nil while it runs
	kick    chan struct{} // a setup page made or connected the profile
}

func newLive(dir string, log *slog.Logger) *live {
	return &live{dir: dir, log: log, wake: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// changed wakes every page waiting for a change.
func (l *live) changed() {
	l.bmu.Lock()
	close(l.wake)
	l.wake = make(chan struct{})
	l.version++
	l.bmu.Unlock()
}

// next returns a channel closed at the next change, and the version now.
func (l *live) next() (<-chan struct{}, uint64) {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	return l.wake, l.version
}

func (l *live) setRunErr(err error) {
	l.bmu.Lock()
	l.runErr = err
	l.bmu.Unlock()
}

// stopped is why Run stopped, nil while it runs.
func (l *live) stopped() error {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	return l.runErr
}

// poke tells the loop that a setup page changed the profile.
func (l *live) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// adopt takes a profile a setup page created as the open one.
func (l *live) adopt(p *tandemcli.Profile) {
	l.mu.Lock()
	if l.prof != nil {
		l.prof.Close()
	}
	l.prof = p
	l.mu.Unlock()
	l.poke()
	l.changed()
}

// current is the open profile, nil when none.
func (l *live) current() *tandemcli.Profile {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.prof
}

// with runs fn with the open profile, waiting up to wait for it while
// another ferry command has it. It reports errBusy when it stays away and
// tandemcli's no_device error when there is no profile yet.
func (l *live) with(ctx context.Context, wait time.Duration, fn func(p *tandemcli.Profile) error) error {
	deadline := time.Now().Add(wait)
	for {
		ch, _ := l.next()
		l.mu.RLock()
		if p := l.prof; p != nil {
			defer l.mu.RUnlock()
			return fn(p)
		}
		l.mu.RUnlock()
		if !tandemcli.HasProfile(l.dir) {
			return errNoProfile
		}
		if time.Now().After(deadline) {
			return errBusy
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-time.After(tick):
		}
	}
}

// errNoProfile is a profile not set up yet: the first-run pages.
var errNoProfile = errors.New("no profile yet")

// loop keeps the device open and running until ctx ends, stepping aside
// while another ferry command wants the profile.
func (l *live) loop(ctx context.Context) {
	defer l.closeDevice()
	for ctx.Err() == nil {
		p := l.current()
		if p == nil {
			if !tandemcli.HasProfile(l.dir) || tandemcli.YieldRequested(l.dir) {
				l.sleep(ctx)
				continue
			}
			var err error
			p, err = tandemcli.OpenProfile(ctx, l.dir)
			if err != nil {
				if tandemcli.Kind(err) != "locked" && ctx.Err() == nil {
					l.log.Warn("opening the profile", "err", err)
				}
				l.sleep(ctx)
				continue
			}
			l.mu.Lock()
			l.prof = p
			l.mu.Unlock()
			l.changed()
		}
		l.run(ctx, p)
	}
}

func (l *live) sleep(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-l.kick:
	case <-time.After(tick):
	}
}

// closeDevice closes the device once no request uses it.
func (l *live) closeDevice() {
	l.mu.Lock()
	if l.prof != nil {
		l.prof.Close()
		l.prof = nil
	}
	l.mu.Unlock()
	l.changed()
}

// run runs the device until ctx ends or another command asks for the
// profile (then it closes the device). Run starts once a hub is connected
// and again after a setup page connects one.
func (l *live) run(ctx context.Context, p *tandemcli.Profile) {
	d := p.Device()
	runCtx, stop := context.WithCancel(ctx)
	var done chan error
	start := func() {
		if done != nil || d.Hub().IsZero() {
			return
		}
		done = make(chan error, 1)
		l.setRunErr(nil)
		go func() { done <- d.Run(runCtx) }()
	}
	halt := func() {
		stop()
		if done != nil {
			<-done
		}
	}
	start()
	t := time.NewTicker(tick)
	defer t.Stop()
	last := statusKey(d.Status(), nil)
	lastSync := d.Status().LastSync
	for {
		select {
		case <-ctx.Done():
			halt()
			return
		case err := <-done:
			done = nil
			if err != nil {
				p.SaveSync(err)
				l.setRunErr(err)
				l.changed()
			}
		case <-l.kick:
			if l.current() != p {
				halt()
				return
			}
			if l.stopped() != nil {
				l.setRunErr(nil)
			}
			start()
		case <-d.Changed():
			l.changed()
		case <-t.C:
			if tandemcli.YieldRequested(p.Dir()) {
				halt()
				l.closeDevice()
				return
			}
			st := d.Status()
			if st.LastSync.After(lastSync) { // requests, members and leaves arrive with a sync
				lastSync = st.LastSync
				p.SaveSync(nil)
				l.changed()
			}
			if k := statusKey(st, l.stopped()); k != last {
				last = k
				l.changed()
			}
		}
	}
}

// statusKey is what the sync indicator shows of a status.
func statusKey(st tandem.Status, runErr error) string {
	return indicator(st, runErr, true).Text
}
