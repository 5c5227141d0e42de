package record

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The convergence test (§9.3): random schedules of honest and malicious
// writers over several devices and epochs. Every replica that has seen the
// same writes, in any order, with duplicates and replays, in one stream or
// merged from parts, must encode to the same bytes, and keep exactly what
// the brute-force oracle keeps.

type simDevice struct {
	w   *Writer
	now int64
	s   *State
}

type sim struct {
	t         *testing.T
	r         *rand.Rand
	v         *Validator
	signed    bool
	epoch     uint64
	devices   []*simDevice
	published []*Write
	stats     *simStats
}

// simStats counts what the schedules produced, so the test fails if the
// generator stops exercising supersession, conflicts, tombstones or
// malicious writes.
type simStats struct {
	superseded, conflicts, deleted, evilKept, multiEpoch int
	namedSaved                                           int // a named record some delete did not remove
}

func newSim(t *testing.T, seed uint64, signed bool, st *simStats) *sim {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &sim{t: t, r: r, v: testValidator(), signed: signed, stats: st}
	// Two users; user 0 has two devices. The malicious writer is user 9
	// and reuses honest device IDs.
	for i, u := range []int{0, 0, 1} {
		d := &simDevice{now: int64(1000 + r.IntN(50)), s: NewState(s.v)}
		d.w = &Writer{Key: key(u), Device: dev(i + 1), Ref: epochRef(0)}
		d.w.Clock = fixedClock(&d.now)
		s.devices = append(s.devices, d)
	}
	return s
}

func epochRef(e uint64) [32]byte { return [32]byte{0xee, byte(e)} }

// finish turns a body into a write: signed, or with only its real ID.
func (s *sim) finish(body suite.WriteBody, priv []byte, epoch uint64) *Write {
	if s.signed {
		w, err := s.v.sign(priv, &body, epoch)
		if err != nil {
			s.t.Fatalf("sign: %v", err)
		}
		return w
	}
	si, err := body.SigInput()
	if err != nil {
		s.t.Fatalf("sigInput: %v", err)
	}
	return &Write{body: body, id: suite.WriteID(si), epoch: epoch, ok: true}
}

func (s *sim) randChange() Change {
	rec := recID(s.r.IntN(3))
	if s.r.IntN(4) == 0 { // a record named by its own _name write (§7.3)
		rec = namedRec
		if s.r.IntN(3) == 0 {
			return assign(rec, nameField, "n1")
		}
	}
	switch k := s.r.IntN(20); {
	case k < 8:
		return assign(rec, []string{"title", "done"}[s.r.IntN(2)], string(rune('a'+s.r.IntN(26))))
	case k < 13:
		return add(rec, "tags", string(rune('x'+s.r.IntN(3))))
	case k < 19:
		return remove(rec, "tags", string(rune('x'+s.r.IntN(3))))
	default: // deletes are writes to a field like any other (§9.2)
		return Change{Record: rec, Field: []string{"", "why"}[s.r.IntN(2)], Op: suite.OpDelete}
	}
}

func (s *sim) honestWrite() {
	d := s.devices[s.r.IntN(len(s.devices))]
	d.now += int64(s.r.IntN(5)) - 1 // a wrong clock may go back
	body, _, err := d.s.prepare(d.w, s.randChange())
	if errors.Is(err, ErrDeleted) || errors.Is(err, ErrNamedDelete) {
		return
	}
	if err != nil {
		s.t.Fatalf("prepare: %v", err)
	}
	w := s.finish(body, d.w.Key, d.w.Epoch)
	if !d.s.Add(w) {
		s.t.Fatalf("honest write not kept by its own device")
	}
	s.published = append(s.published, w)
}

func (s *sim) sync() {
	d := s.devices[s.r.IntN(len(s.devices))]
	for _, i := range s.r.Perm(len(s.published)) {
		if s.r.IntN(2) == 0 {
			d.s.Add(s.published[i])
		}
	}
}

// maliciousWrite signs something no honest device would: a dot reused from
// another write, a context covering the future or another write's reach
// plus its own, in any epoch up to the current one.
func (s *sim) maliciousWrite() {
	c := s.randChange()
	body := suite.WriteBody{Scope: testScope, Record: c.Record, Field: c.Field, Op: c.Op, Element: c.Element, Value: []byte("evil")}
	if c.Op != suite.OpAssign || c.Field == nameField {
		body.Value = c.Value
	}
	body.Author = pubOf(key(9))
	epoch := uint64(s.r.IntN(int(s.epoch) + 1))
	body.Ref = epochRef(epoch)
	body.Dot = suite.Dot{Device: dev(1 + s.r.IntN(4)), HLC: suite.HLC{Millis: uint64(1000 + s.r.IntN(60))}}
	body.Context, body.Base = suite.VV{}, suite.VV{}
	switch s.r.IntN(4) {
	case 0: // same dot as an existing write
		if len(s.published) > 0 {
			body.Dot = s.published[s.r.IntN(len(s.published))].body.Dot
		}
	case 1: // covers the future
		body.Context = suite.VV{}
		for i := 1; i <= 4; i++ {
			body.Context = append(body.Context, suite.Dot{Device: dev(i), HLC: suite.HLC{Millis: suite.MaxHLCMillis, Counter: 0xffff}})
		}
		if s.r.IntN(2) == 0 {
			body.Base = body.Context
		}
	case 2: // covers another write and itself, so the two may cover each other
		if len(s.published) > 0 {
			o := s.published[s.r.IntN(len(s.published))]
			body.Context = vvJoinDot(reach(o), body.Dot)
			body.Base = o.body.Base
		}
	default: // random small vectors
		body.Context = randVV(s.r, 5, false)
		body.Base = randVV(s.r, 5, false)
	}
	s.published = append(s.published, s.finish(body, key(9), epoch))
}

// replay publishes an old write again, sometimes with another valid
// signature for the same write ID (a signer may choose any nonce).
func (s *sim) replay() {
	if len(s.published) == 0 {
		return
	}
	w := s.published[s.r.IntN(len(s.published))]
	if s.r.IntN(3) == 0 {
		c := *w
		if s.signed {
			if w.body.Author != pubOf(key(9)) {
				return // only the malicious user's key is at hand
			}
			si, _ := w.body.SigInput()
			c.sig = signWithNonce(s.t, key(9), si, byte(s.r.IntN(256)))
		} else {
			c.sig = make([]byte, 64)
			for i := range c.sig {
				c.sig[i] = byte(s.r.IntN(256))
			}
		}
		w = &c
	}
	s.published = append(s.published, w)
}

// rotate starts the next epoch: devices sync partly, then sign again some of
// their user's kept writes of earlier epochs (§11.6).
func (s *sim) rotate() {
	s.epoch++
	for _, d := range s.devices {
		for _, w := range s.published {
			if s.r.IntN(4) != 0 {
				d.s.Add(w)
			}
		}
		d.w.Epoch, d.w.Ref = s.epoch, epochRef(s.epoch)
	}
	for _, d := range s.devices {
		for w := range d.s.All() {
			if w.epoch < s.epoch && w.body.Author == pubOf(d.w.Key) && s.r.IntN(2) == 0 {
				body, err := resignBody(d.w, w)
				if err != nil {
					s.t.Fatalf("resign: %v", err)
				}
				nw := s.finish(body, d.w.Key, s.epoch)
				d.s.Add(nw)
				s.published = append(s.published, nw)
			}
		}
	}
}

func (s *sim) run(steps int) {
	for range steps {
		switch k := s.r.IntN(100); {
		case k < 45:
			s.honestWrite()
		case k < 70:
			s.sync()
		case k < 85:
			s.maliciousWrite()
		case k < 94:
			s.replay()
		default:
			if s.epoch < 2 {
				s.rotate()
			}
		}
	}
}

// replica adds ws to a fresh state, or ingests them with their signatures.
func (s *sim) replica(ws []*Write) *State {
	st := NewState(s.v)
	for _, w := range ws {
		if s.signed && s.r.IntN(3) == 0 {
			body := w.Body()
			if _, _, err := st.Ingest(&body, w.sig, w.epoch); err != nil {
				s.t.Fatalf("ingest of a signed write: %v", err)
			}
			continue
		}
		st.Add(w)
	}
	return st
}

// check builds several replicas of everything published and compares them.
func (s *sim) check() {
	all := s.published
	want := oracle(all)
	ref := s.replica(all)
	refBytes := encode(s.t, ref)
	if got := keptIDs(ref); !slices.Equal(got, want) {
		s.t.Fatalf("state keeps %d writes, oracle %d", len(got), len(want))
	}
	s.count(ref, len(want))
	compare := func(name string, st *State) {
		if b := encode(s.t, st); !bytes.Equal(b, refBytes) {
			s.t.Fatalf("%s replica diverged (%d vs %d bytes)", name, len(b), len(refBytes))
		}
		checkKeptIDs(s.t, st) // its list kept up to date through every arrival order
	}
	// Reversed and shuffled with duplicates.
	rev := slices.Clone(all)
	slices.Reverse(rev)
	compare("reversed", s.replica(rev))
	shuf := slices.Clone(all)
	shuf = append(shuf, all[:len(all)/2]...)
	s.r.Shuffle(len(shuf), func(i, j int) { shuf[i], shuf[j] = shuf[j], shuf[i] })
	compare("shuffled", s.replica(shuf))
	// Merged from random parts, in random order.
	parts := make([][]*Write, 1+s.r.IntN(4))
	for _, w := range shuf {
		p := s.r.IntN(len(parts))
		parts[p] = append(parts[p], w)
	}
	merged := NewState(s.v)
	for _, p := range s.r.Perm(len(parts)) {
		merged.Merge(s.replica(parts[p]))
	}
	compare("merged", merged)
	// Every honest device, after catching up, in its own order.
	for _, d := range s.devices {
		for _, i := range s.r.Perm(len(all)) {
			d.s.Add(all[i])
		}
		compare("device", d.s)
	}
}

func (s *sim) count(ref *State, kept int) {
	uniq := map[[32]byte]bool{}
	epochs := map[uint64]bool{}
	for _, w := range s.published {
		uniq[w.id] = true
		epochs[w.epoch] = true
	}
	s.stats.superseded += len(uniq) - kept
	if len(epochs) > 1 {
		s.stats.multiEpoch++
	}
	deletes := map[[16]byte]bool{}
	for _, w := range s.published {
		deletes[w.body.Record] = deletes[w.body.Record] || w.body.Op == suite.OpDelete
	}
	for id := range ref.Records() {
		if ref.Deleted(id) {
			s.stats.deleted++
		}
		if deletes[id] && !ref.Deleted(id) && ref.records[id].named() {
			s.stats.namedSaved++
		}
		for _, f := range ref.Fields(id) {
			if len(ref.Values(id, f)) > 1 {
				s.stats.conflicts++
			}
		}
		for _, w := range ref.Writes(id) {
			if w.body.Author == pubOf(key(9)) {
				s.stats.evilKept++
			}
		}
	}
}

func TestConvergenceRandomSchedules(t *testing.T) {
	schedules := 10000
	if testing.Short() {
		schedules = 1000
	}
	signed := 0
	var st simStats
	for i := range schedules {
		sg := i%50 == 0 // every 50th schedule signs and verifies for real
		if sg {
			signed++
		}
		s := newSim(t, uint64(i), sg, &st)
		s.run(10 + s.r.IntN(30))
		s.check()
	}
	t.Logf("%d schedules, %d with real signatures; %+v", schedules, signed, st)
	if st.superseded == 0 || st.conflicts == 0 || st.deleted == 0 || st.evilKept == 0 || st.multiEpoch == 0 || st.namedSaved == 0 {
		t.Fatalf("schedules do not exercise the merge: %+v", st)
	}
}
