package tandem

import (
	"fmt"
	mrand "math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Issue 22's randomized test: three honest devices (Jesper's two and Ben,
// a writer) edit, go offline and come back while Jesper changes the key
// now and then; Aimee, removed at the first change, keeps the mail
// password and the first epoch's key: she destroys messages in the
// collection's channels, replays messages she copied, and posts
// old-epoch writes of her own. Once everything is delivered, the honest
// devices hold byte-identical state, every write in it is one the current
// epoch accepts (§8.3, §11.6), and none of Aimee's late writes is there.
// Grants and home are left alone: a destroyed grant is replaced on a key
// request after ten minutes (TestKeyRequestAfterLostGrant), longer than a
// test waits.
func TestEpochMovesUnderAttack(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { epochMovesUnderAttack(t, seed) })
	}
}

func epochMovesUnderAttack(t *testing.T, seed uint64) {
	srv := memhubServer(t)
	raw := srv.Open()
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv), Logger: quiet()} })
	if err := s.j1.SetRole(t.Context(), s.c, s.be.UserID(), RoleWriter); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	rng := mrand.New(mrand.NewPCG(seed, 22))
	honest := []*Device{s.j1, s.j2, s.be}
	var recs []RecordID
	for i := range 3 {
		id, err := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte(fmt.Sprint("item ", i))})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, id)
	}
	s.syncAll(1)
	epoch0, head0 := epochOf(s.ai, s.c)
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	private := map[string]bool{}
	for _, d := range s.all() {
		if d != nil {
			id := suite.NewIdentity(d.us)
			private[id.HomeTag], private[id.InboxTag] = true, true
		}
	}
	var copied [][2]string // channel, envelope: what Aimee copied to replay
	var hostile []*record.Write
	offline := map[*Device]bool{}
	for step := range 40 {
		switch k := rng.IntN(10); {
		case k < 4: // an honest edit, online or not
			d := honest[rng.IntN(len(honest))]
			id := recs[rng.IntN(len(recs))]
			var err error
			switch rng.IntN(6) {
			case 0:
				id, err = d.NewRecord(s.c, map[string][]byte{"title": []byte(fmt.Sprint("new ", step))})
				recs = append(recs, id)
			case 1:
				err = d.Delete(s.c, id)
			case 2:
				err = d.AddElement(s.c, id, "tags", []byte(fmt.Sprint("t", rng.IntN(3))))
			default:
				err = d.SetString(s.c, id, "title", fmt.Sprint("step ", step))
			}
			if err != nil && CodeOf(err) != CodeNotWritable { // an edit of a deleted item is refused
				t.Fatal(err)
			}
		case k < 5: // a device goes offline or comes back
			d := honest[rng.IntN(len(honest))]
			offline[d] = !offline[d]
		case k < 6: // Jesper changes the key (it needs the network)
			if !offline[s.j1] {
				if err := s.j1.NewKey(t.Context(), s.c); err != nil && CodeOf(err) != CodeInFlight {
					t.Fatal(err)
				}
			}
		case k < 8: // Aimee: destroy, copy, replay, post
			ch, err := raw.Changes(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var ids []hub.ID
			chans := map[hub.ID]string{}
			for _, a := range ch.Added {
				if !private[a.Channel] {
					ids = append(ids, a.ID)
					chans[a.ID] = a.Channel
				}
			}
			rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			if len(ids) > 0 {
				bodies, err := raw.Fetch(t.Context(), ids[:1])
				if err == nil && bodies[0].Err == nil {
					copied = append(copied, [2]string{chans[ids[0]], string(bodies[0].Envelope)})
				}
				if err := raw.Destroy(t.Context(), ids[:min(2, len(ids))]); err != nil {
					t.Fatal(err)
				}
			}
			if len(copied) > 0 {
				c := copied[rng.IntN(len(copied))]
				if _, err := raw.Append(t.Context(), c[0], []byte(c[1])); err != nil {
					t.Fatal(err)
				}
			}
			ch0 := record.Change{Record: [16]byte(recs[rng.IntN(len(recs))]), Field: "title", Op: suite.OpAssign, Value: []byte(fmt.Sprint("Aimee ", step))}
			if rng.IntN(3) == 0 {
				ch0 = record.Change{Record: ch0.Record, Op: suite.OpDelete}
			}
			hostile = append(hostile, postOld(t, s.ai, s.c, raw, epoch0, head0, ch0))
		default: // the online devices sync
			for _, d := range honest {
				if !offline[d] {
					syncT(t, d)
				}
			}
		}
	}
	// Everything delivered: every honest device online until they agree.
	syncUntil(t, "the honest devices agree", func() bool {
		for _, d := range honest {
			if d.Status().Pending > 0 || d.eng.Rotating([16]byte(s.c)) {
				return false
			}
		}
		return sameBytes(t, s.c, s.j1, s.j2, s.be)
	}, honest...)
	bad := map[[32]byte]bool{}
	for _, w := range hostile {
		bad[w.ID()] = true
	}
	for i, d := range honest {
		if e, _ := epochOf(d, s.c); e == epoch0 {
			t.Fatalf("device %d never moved", i)
		}
		d.eng.View([16]byte(s.c), func(st *record.State, r *roster.Roster, _ roster.Status) {
			n, _ := r.Counter(r.Epoch())
			inv, _ := r.Inventory(r.Epoch())
			for w := range st.All() {
				if bad[w.ID()] {
					t.Fatalf("device %d holds a write Aimee posted after her removal", i)
				}
				if w.Epoch() != n && (inv == nil || !inv.Lists(w.Record(), w.ID())) {
					t.Fatalf("device %d holds a write of epoch %d the current epoch %d does not list", i, w.Epoch(), n)
				}
			}
		})
	}
}
