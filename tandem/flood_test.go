package tandem

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Issue 23 point 2: automatic answers are deduplicated and rate-limited,
// and the device's own edits go out first. Run on memhub and Dovecot.

// allowance rations the owner's appends, as a small append budget would,
// across the stores its device opens.
type allowance struct {
	mu    sync.Mutex
	left  int // appends allowed; < 0: no limit
	added []string
}

type rationed struct {
	hub.Store
	a *allowance
}

func (r *rationed) Append(ctx context.Context, ch string, env []byte) (hub.ID, error) {
	a := r.a
	a.mu.Lock()
	if a.left == 0 {
		a.mu.Unlock()
		return "", &hub.BudgetError{What: "append", N: 1}
	}
	if a.left > 0 {
		a.left--
	}
	a.added = append(a.added, ch)
	a.mu.Unlock()
	return r.Store.Append(ctx, ch, env)
}

func (a *allowance) ration(n int) { a.mu.Lock(); a.left, a.added = n, nil; a.mu.Unlock() }

func (a *allowance) appended(ch string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.added {
		if c == ch || ch == "" {
			n++
		}
	}
	return n
}

// floodHub is one hub account for the owner (through an allowance) and
// for everyone else.
type floodHub struct {
	owner *allowance
	opts  func(name string) Options
	raw   hub.Store
}

func floodHubs(t *testing.T) map[string]func(t *testing.T) *floodHub {
	return map[string]func(t *testing.T) *floodHub{
		"memhub": func(t *testing.T) *floodHub {
			srv := memhub.NewServer()
			return newFloodHub(t, func(context.Context) (hub.Store, error) { return srv.Open(), nil })
		},
		"dovecot": func(t *testing.T) *floodHub {
			h := dovecotHub(t, "bruno") // emptied
			return newFloodHub(t, func(ctx context.Context) (hub.Store, error) {
				return imaphub.Open(ctx, imaphub.Config{Addr: h.d.Host + ":" + strconv.Itoa(h.d.Port), User: h.d.User, Password: h.d.Password})
			})
		},
	}
}

func newFloodHub(t *testing.T, open func(context.Context) (hub.Store, error)) *floodHub {
	raw, err := open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	f := &floodHub{owner: &allowance{left: -1}, raw: raw}
	f.opts = func(name string) Options {
		if name != "Jesper" {
			return Options{Name: name, Store: open}
		}
		// A failed sync closes its store and opens another: the ration
		// carries over.
		return Options{Name: name, Store: func(ctx context.Context) (hub.Store, error) {
			s, err := open(ctx)
			if err != nil {
				return nil, err
			}
			return &rationed{Store: s, a: f.owner}, nil
		}}
	}
	return f
}

// Junk join requests on a closed invite get at most a burst of declines,
// and with the appends rationed the owner's own edit still goes out first
// (defect 4).
func TestJunkRequestsDeclinedWithinRate(t *testing.T) {
	for name, mk := range floodHubs(t) {
		t.Run(name, func(t *testing.T) {
			f := mk(t)
			h := newHostile(t, f.opts, f.raw)
			_, i, inv := h.invite(InviteOptions{Link: true})
			if _, err := h.owner.CloseInvites(h.c); err != nil {
				t.Fatal(err)
			}
			syncT(t, h.owner)
			const junk = 60
			for n := range junk {
				h.postJoin(newIdentity(t), i, inv, fmt.Sprintf("Junk %d", n), inv.SignKey, "")
			}
			f.owner.ration(5)
			h.owner.Sync(t.Context()) // runs out of appends
			if _, err := h.owner.NewRecord(h.c, map[string][]byte{"title": []byte("Own edit")}); err != nil {
				t.Fatal(err)
			}
			f.owner.ration(1)
			h.owner.Sync(t.Context()) // room for one append
			tag := h.epochTag()
			if f.owner.appended(tag) != 1 {
				t.Fatalf("with one append left, the owner's edit was not the one appended (%d appends in its channel)", f.owner.appended(tag))
			}
			f.owner.ration(-1)
			rep := syncT(t, h.owner)
			rep2 := syncT(t, h.owner)
			if total := f.owner.appended(""); total > 20 || rep2.Published != 0 {
				t.Fatalf("%d junk requests: %d more appends (burst %d): %+v, then %+v", junk, total, 20, rep, rep2)
			}
			if len(requestsT(t, h.owner, h.c)) != 0 {
				t.Fatalf("requests on a closed invite listed: %d", len(requestsT(t, h.owner, h.c)))
			}
		})
	}
}

// epochChannel is the owner's current epoch channel of the collection, and
// its key (what any member holds).
func (h *hostile) epochChannel() (string, [32]byte) {
	var epoch [32]byte
	h.owner.eng.View([16]byte(h.c), func(_ *record.State, r *roster.Roster, _ roster.Status) { epoch = r.Epoch() })
	tag, key, ok := h.owner.eng.EpochChannel([16]byte(h.c), epoch)
	if !ok {
		h.t.Fatal("no epoch channel")
	}
	return tag, key
}

func (h *hostile) epochTag() string { tag, _ := h.epochChannel(); return tag }

// admit makes a device join through a new link and the owner approve it.
func (h *hostile) admit(name string) *Device {
	t := h.t
	link, _, _ := h.invite(InviteOptions{Link: true})
	d := h.device(name)
	if _, err := d.Join(t.Context(), link.Payload, name); err != nil {
		t.Fatal(err)
	}
	syncT(t, d)
	syncT(t, h.owner)
	reqs := requestsT(t, h.owner, h.c)
	if len(reqs) != 1 {
		t.Fatalf("requests: %+v", reqs)
	}
	if err := h.owner.Approve(t.Context(), reqs[0].ID); err != nil {
		t.Fatal(err)
	}
	syncT(t, h.owner)
	syncT(t, d)
	if membershipT(t, d, h.c) != MembershipActive {
		t.Fatalf("%s: %q", name, membershipT(t, d, h.c))
	}
	return d
}

// postKeyReqs posts k copies of member's key request (§11.4) as notices in
// the current epoch channel, as anyone who saw one can.
func (h *hostile) postKeyReqs(member *Device, k int) {
	t := h.t
	tag, key := h.epochChannel()
	var have [32]byte
	h.owner.eng.View([16]byte(h.c), func(_ *record.State, r *roster.Roster, _ roster.Status) { have = r.Head().ID() })
	id := suite.NewIdentity(member.us)
	c := [16]byte(h.c)
	sig := ed25519.Sign(id.SignKey, suite.KeyReqSigInput(c, have, id.UID))
	pt, _ := json.Marshal(map[string]any{"type": "keyreq", "c": tjson.Bytes(c[:]), "have": tjson.Bytes(have[:]),
		"by": tjson.Bytes(id.UID[:]), "sig": tjson.Bytes(sig)})
	for range k {
		env, err := suite.SealEnvelope(suite.KindRequest, key, tag, pt, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.raw.Append(t.Context(), tag, env); err != nil {
			t.Fatal(err)
		}
	}
}

// Copies of one key request get one answer (defect 4).
func TestReplayedKeyRequestAnsweredOnce(t *testing.T) {
	for name, mk := range floodHubs(t) {
		t.Run(name, func(t *testing.T) {
			f := mk(t)
			h := newHostile(t, f.opts, f.raw)
			ben := h.admit("Ben")
			h.postKeyReqs(ben, 100)
			f.owner.ration(-1)
			syncT(t, h.owner)
			syncT(t, h.owner)
			if n := f.owner.appended(suite.NewIdentity(ben.us).InboxTag); n != 1 {
				t.Fatalf("100 copies of one key request: %d answers, want 1", n)
			}
		})
	}
}

// Join requests from one identity collapse into one pending request, the
// first (its name stays); a collection lists at most MaxPendingRequests
// (defect 6).
func TestJoinRequestsOfOneIdentityCollapse(t *testing.T) {
	for name, mk := range floodHubs(t) {
		t.Run(name, func(t *testing.T) {
			f := mk(t)
			h := newHostile(t, f.opts, f.raw)
			_, i, inv := h.invite(InviteOptions{Link: true})
			x := newIdentity(t)
			for n := range 150 {
				h.postJoin(x, i, inv, fmt.Sprintf("Name %d", n), inv.SignKey, "")
			}
			for range 120 {
				h.postJoin(newIdentity(t), i, inv, "Someone", inv.SignKey, "")
			}
			syncT(t, h.owner)
			reqs := requestsT(t, h.owner, h.c)
			mine := 0
			for _, r := range reqs {
				if r.User == UserID(x.UID) {
					mine++
					if r.Name != "Name 0" {
						t.Errorf("the pending request is named %q, want the first, %q", r.Name, "Name 0")
					}
				}
			}
			if mine != 1 || len(reqs) > 100 {
				t.Fatalf("150 requests of one identity and 120 of others: %d of the one listed, %d in all", mine, len(reqs))
			}
		})
	}
}

// Messages refused for the held bound are remembered across a restart,
// with their first sighting: the reopened device downloads none again.
func TestRefusedRememberedAcrossRestart(t *testing.T) {
	s := newFloodScene(t)
	s.held(t, 14, 490<<10) // about 900 KB each: past the 8 MiB per collection
	rep := syncT(t, s.h.owner)
	held := rep.Held
	if held == 0 || held >= 14 {
		t.Fatalf("held %d of 14 (bound 8 MiB): %+v", held, rep)
	}
	s.h.owner.Close()
	s.h.owner = openT(t, s.dir, s.h.opts("Jesper"))
	t.Cleanup(func() { s.h.owner.Close() })
	s.fetched.Store(0)
	rep = syncT(t, s.h.owner)
	if f := s.fetched.Load(); f != 0 || rep.Held != held {
		t.Fatalf("after a restart: %d bytes downloaded again, %d held (before: %d)", f, rep.Held, held)
	}
}
