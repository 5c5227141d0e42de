package client

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// A pull reads the hub in three overlapping stages
// (docs/decisions/tandem-client-pipeline.md):
//
//   - one goroutine fetches the batches, in order;
//   - GOMAXPROCS workers do for each fetched message what needs none of the
//     device's state: open the envelope (§5.4), read the payload strictly
//     (§10.5) and verify every signature of a data message (§5.5), one
//     strict verification per signature;
//   - the pull itself judges and merges the batches in fetch order, under
//     d.mu, once every worker is done with the batch.
//
// Every result is a function of the message and of the channel it was
// computed for, and the merge takes them in fetch order, so the outcome does
// not depend on which worker finished first. At most readAhead fetched
// batches wait for the merge, besides the one merging and the one being
// fetched: enough for the workers to keep verifying while the merge commits
// a transaction of syncCommitItems (verifying a batch of 256 messages of
// ten writes takes about 60 ms on two cores, such a commit tens of
// milliseconds).

// readAhead is how many fetched batches may wait for the merge, and
// readAheadBytes how many envelope bytes they may hold together: the fetch
// goroutine waits for the merge once that much is ahead of it, so a flood
// of large messages costs at most readAheadBytes plus the batch being
// fetched (docs/decisions/tandem-client-bounds.md), whatever readAhead:
// each byte ahead costs about three once the workers opened and decoded it.
const (
	readAhead      = 16
	readAheadBytes = 2 << 20
)

// preOpened is the stateless part of opening one fetched message of a data
// channel, done by a worker for channel ch.
type preOpened struct {
	ch   *channel // the channel it was done for; nil: not done
	kind suite.Kind
	pt   []byte
	err  error // OpenEnvelope's
	p    *Payload
	perr error // DecodePayload's
	// a data message's writes, verified (checked set) by verifyData
	checked  bool
	verified []*record.Verified
	verr     error
}

// preOpen opens env as a message of channel ch and reads its payload; with
// verify, it also verifies the writes of a data message. It reads only ch's
// fields that never change (tag, key, coll.id, coll.state's validator).
func preOpen(ch *channel, homeScope [16]byte, env []byte, verify bool) preOpened {
	r := preOpened{ch: ch}
	if ch.role != roleData {
		return r
	}
	r.kind, r.pt, r.err = suite.OpenEnvelope(ch.key, ch.tag, env)
	if r.err != nil || r.kind != suite.KindRecord {
		return r
	}
	scope := homeScope
	if ch.coll != nil {
		scope = [16]byte(ch.coll.id)
	}
	r.p, r.perr = DecodePayload(r.pt, scope)
	if !verify || r.perr != nil || ch.coll == nil || r.p.Record == nil || r.p.Record.Record == rosterRecordID {
		return r
	}
	r.verified, r.verr = verifyData(ch.coll, r.p.Record.Writes)
	r.checked = true
	return r
}

// fetchedBatch is one Fetch's answer and the workers' results for it.
type fetchedBatch struct {
	bodies []hub.Body
	pre    []preOpened
	err    error          // the Fetch failed
	size   int64          // envelope bytes of bodies
	wg     sync.WaitGroup // the workers' share of the batch
}

// reader runs the fetch goroutine and the workers of one pass of a pull.
type reader struct {
	out    chan *fetchedBatch // in fetch order
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ahead  atomic.Int64  // envelope bytes fetched and not yet merged
	merged chan struct{} // a batch was merged (capacity 1: a wake-up, not a count)
}

type preJob struct {
	b *fetchedBatch
	i int
}

// startReading fetches batches from s in order and has the workers
// pre-open their messages with the channels chans (a snapshot of d.chans).
// The caller reads r.out and calls r.stop.
func startReading(ctx context.Context, s hub.Store, batches [][]hub.ID, chans map[string]*channel, homeScope [16]byte) *reader {
	ctx, cancel := context.WithCancel(ctx)
	r := &reader{out: make(chan *fetchedBatch, readAhead), cancel: cancel, merged: make(chan struct{}, 1)}
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan preJob, 4*workers)
	for range workers {
		r.wg.Go(func() {
			for j := range jobs {
				if ctx.Err() == nil {
					b := j.b.bodies[j.i]
					if ch := chans[b.Channel]; ch != nil && b.Err == nil {
						j.b.pre[j.i] = preOpen(ch, homeScope, b.Envelope, true)
					}
				}
				j.b.wg.Done()
			}
		})
	}
	r.wg.Go(func() {
		defer close(r.out)
		defer close(jobs)
		for _, ids := range batches {
			for r.ahead.Load() >= readAheadBytes {
				select {
				case <-r.merged:
				case <-ctx.Done():
					return
				}
			}
			f := &fetchedBatch{}
			f.bodies, f.err = s.Fetch(ctx, ids)
			if f.err == nil && len(f.bodies) != len(ids) {
				f.err = &hub.ProtocolError{Op: "fetch", Msg: "wrong number of bodies"}
			}
			for _, b := range f.bodies {
				f.size += int64(len(b.Envelope))
			}
			r.ahead.Add(f.size)
			if f.err == nil {
				f.pre = make([]preOpened, len(f.bodies))
				f.wg.Add(len(f.bodies))
			}
			select {
			case r.out <- f:
			case <-ctx.Done():
				return
			}
			if f.err != nil {
				return
			}
			for i := range f.bodies {
				select {
				case jobs <- preJob{f, i}:
				case <-ctx.Done():
					f.wg.Add(i - len(f.bodies)) // never dispatched: the merge stops waiting
					return
				}
			}
		}
	})
	return r
}

// done tells the fetch goroutine that f was merged: its bytes are no
// longer ahead.
func (r *reader) done(f *fetchedBatch) {
	r.ahead.Add(-f.size)
	select {
	case r.merged <- struct{}{}:
	default:
	}
}

// stop ends the fetch goroutine and the workers and waits for them.
func (r *reader) stop() {
	r.cancel()
	r.wg.Wait()
}

// fetchBatches splits the messages to read into Fetch calls, each bounded
// in count and in bytes (bounds.nextBatch). With readAhead batches waiting,
// one merging and one being fetched, a pull holds at most readAhead+2
// batches' bytes at once.
func (d *Device) fetchBatches(todo []fetchItem) [][]hub.ID {
	var out [][]hub.ID
	for len(todo) > 0 {
		n := d.bounds.nextBatch(todo)
		ids := make([]hub.ID, n)
		for i, it := range todo[:n] {
			ids[i] = it.id
		}
		out = append(out, ids)
		todo = todo[n:]
	}
	return out
}

// readAll fetches, pre-opens and merges the messages todo, batch by batch
// in order (see reader). What it merged is staged for the journal. d.mu is
// not held.
func (d *Device) readAll(ctx context.Context, s hub.Store, todo []fetchItem, rep *SyncReport, deferred map[hub.ID]bool) error {
	d.mu.Lock()
	chans := make(map[string]*channel, len(d.chans))
	for tag, ch := range d.chans {
		chans[tag] = ch
	}
	d.mu.Unlock()
	batches := d.fetchBatches(todo)
	r := startReading(ctx, s, batches, chans, d.id.HomeScope)
	defer r.stop()
	n := 0
	for f := range r.out {
		f.wg.Wait()
		if f.err != nil {
			return fmt.Errorf("tandem/client: fetch: %w", f.err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("tandem/client: fetch: %w", err)
		}
		n++
		rep.Fetched += len(f.bodies)
		d.fetched.Add(int64(len(f.bodies)))
		d.mu.Lock()
		d.process(f.bodies, f.pre, rep, deferred)
		err := d.stageSynced()
		d.mu.Unlock()
		r.done(f)
		if err != nil {
			return err
		}
	}
	if n < len(batches) {
		return fmt.Errorf("tandem/client: fetch: %w", context.Cause(ctx))
	}
	return nil
}
