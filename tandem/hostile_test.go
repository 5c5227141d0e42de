package tandem

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// hostile is an owner with a collection, and the raw hub a hostile
// participant appends to.
type hostile struct {
	t     *testing.T
	owner *Device
	c     CollectionID
	raw   hub.Store
	opts  func(string) Options
}

func newHostile(t *testing.T, opts func(string) Options, raw hub.Store) *hostile {
	h := &hostile{t: t, raw: raw, opts: opts}
	h.owner = openT(t, filepath.Join(t.TempDir(), "owner"), opts("Jesper"))
	t.Cleanup(func() { h.owner.Close() })
	var err error
	if h.c, err = h.owner.NewCollection("House"); err != nil {
		t.Fatal(err)
	}
	syncT(t, h.owner)
	return h
}

func (h *hostile) device(name string) *Device {
	d := openT(h.t, filepath.Join(h.t.TempDir(), name), h.opts(name))
	h.t.Cleanup(func() { d.Close() })
	return d
}

// invite makes an invite and returns its parsed payload.
func (h *hostile) invite(o InviteOptions) (Invite, [16]byte, *suite.Invite) {
	inv, err := h.owner.Invite(h.c, o)
	if err != nil {
		h.t.Fatal(err)
	}
	syncT(h.t, h.owner)
	var p struct {
		I tjson.Bytes `json:"i"`
		S tjson.Bytes `json:"s"`
	}
	if err := tjson.Unmarshal([]byte(inv.Payload), &p); err != nil {
		h.t.Fatal(err)
	}
	return inv, [16]byte(p.I), suite.NewInvite([32]byte(p.S))
}

// postJoin appends a join request built by hand to the invite channel.
func (h *hostile) postJoin(id *suite.Identity, i [16]byte, inv *suite.Invite, name string, isigKey ed25519.PrivateKey, raw string) {
	c := [16]byte(h.c)
	pt := []byte(raw)
	if raw == "" {
		pt, _ = json.Marshal(map[string]any{"uid": tjson.Bytes(id.UID[:]), "uka": tjson.Bytes(id.UKa[:]), "name": name,
			"sig":  tjson.Bytes(ed25519.Sign(id.SignKey, suite.JoinSigInput(c, i, id.UID, id.UKa, name))),
			"isig": tjson.Bytes(ed25519.Sign(isigKey, suite.InviteSigInput(c, i, id.UID)))})
	}
	env, err := suite.SealEnvelope(suite.KindRequest, inv.ChannelKey, inv.Tag, pt, rand.Reader)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.raw.Append(h.t.Context(), inv.Tag, env); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hostile) members() int {
	ms, err := h.owner.Members(h.c)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(ms)
}

func newIdentity(t *testing.T) *suite.Identity {
	var us [32]byte
	rand.Read(us[:])
	return suite.NewIdentity(us)
}

func runHostile(t *testing.T, opts func(string) Options, raw hub.Store) {
	t.Run("forged isig", func(t *testing.T) {
		h := newHostile(t, opts, raw)
		_, i, inv := h.invite(InviteOptions{})
		x := newIdentity(t)
		_, wrong, _ := ed25519.GenerateKey(nil)
		h.postJoin(x, i, inv, "Mallory", wrong, "")
		rep := syncT(t, h.owner)
		if rep.Rejected == 0 || h.members() != 1 || len(requestsT(t, h.owner, h.c)) != 0 {
			t.Fatalf("a request with a forged isig: %+v, %d members", rep, h.members())
		}
	})
	t.Run("duplicate JSON key", func(t *testing.T) {
		h := newHostile(t, opts, raw)
		_, i, inv := h.invite(InviteOptions{Link: true})
		x := newIdentity(t)
		c := [16]byte(h.c)
		sig := tjson.Bytes(ed25519.Sign(x.SignKey, suite.JoinSigInput(c, i, x.UID, x.UKa, "Ann")))
		isig := tjson.Bytes(ed25519.Sign(inv.SignKey, suite.InviteSigInput(c, i, x.UID)))
		enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		raw := `{"uid":` + enc(tjson.Bytes(x.UID[:])) + `,"uka":` + enc(tjson.Bytes(x.UKa[:])) + `,"name":"Ann","name":"Bob","sig":` + enc(sig) + `,"isig":` + enc(isig) + `}`
		h.postJoin(x, i, inv, "", nil, raw)
		rep := syncT(t, h.owner)
		if rep.Rejected == 0 || len(requestsT(t, h.owner, h.c)) != 0 {
			t.Fatalf("a request with a duplicate key: %+v", rep)
		}
	})
	t.Run("past maxUses", func(t *testing.T) {
		h := newHostile(t, opts, raw)
		qr, _, _ := h.invite(InviteOptions{}) // one use
		a, b := h.device("aimee"), h.device("ben")
		for _, d := range []*Device{a, b} {
			if _, err := d.Join(t.Context(), qr.Payload, "someone"); err != nil {
				t.Fatal(err)
			}
			syncT(t, d)
			syncT(t, h.owner)
			syncT(t, d)
		}
		if membershipT(t, a, h.c) != MembershipActive || membershipT(t, b, h.c) == MembershipActive || h.members() != 2 {
			t.Fatalf("one-use QR: Aimee %q, Ben %q, %d members", membershipT(t, a, h.c), membershipT(t, b, h.c), h.members())
		}
	})
	t.Run("expired invite", func(t *testing.T) {
		h := newHostile(t, opts, raw)
		qr, i, inv := h.invite(InviteOptions{Expires: 300 * time.Millisecond})
		time.Sleep(400 * time.Millisecond)
		d := h.device("late")
		_, err := d.Join(t.Context(), qr.Payload, "Late")
		var e *Error
		if CodeOf(err) != CodeExpired || !errors.As(err, &e) || e.Message != "This code has expired. Ask for a new one." {
			t.Fatalf("joining with an expired invite: %v", err)
		}
		// A request posted anyway is not admitted.
		h.postJoin(newIdentity(t), i, inv, "Late", inv.SignKey, "")
		rep := syncT(t, h.owner)
		// The device that made the invite says so (a decline, §11.4).
		if h.members() != 1 || rep.Declined != 1 {
			t.Fatalf("a request on an expired invite: %+v, %d members", rep, h.members())
		}
	})
	t.Run("grant never asked for", func(t *testing.T) {
		h := newHostile(t, opts, raw)
		x := h.device("x")
		syncT(t, x)
		xid := suite.NewIdentity(x.us)
		key := make([]byte, 32)
		rand.Read(key)
		h.postGrant(xid, [32]byte(key), [32]byte{1}, [32]byte{2})
		rep := syncT(t, x)
		if rep.Rejected == 0 || slicesContains(x.Collections(), h.c) {
			t.Fatalf("a grant never asked for: %+v, follows %v", rep, x.Collections())
		}
	})
	t.Run("grant key does not match the commitment", func(t *testing.T) {
		h := newHostile(t, opts, raw)
		link, _, _ := h.invite(InviteOptions{Link: true})
		x := h.device("x")
		if _, err := x.Join(t.Context(), link.Payload, "X"); err != nil {
			t.Fatal(err)
		}
		syncT(t, x)
		syncT(t, h.owner)
		var epoch, at [32]byte
		h.owner.eng.View([16]byte(h.c), func(_ *record.State, ro *roster.Roster, _ roster.Status) { epoch, at = ro.Epoch(), ro.Head().ID() })
		wrong := make([]byte, 32)
		rand.Read(wrong)
		h.postGrant(suite.NewIdentity(x.us), [32]byte(wrong), at, epoch)
		syncT(t, x)
		rep := syncT(t, x)
		if membershipT(t, x, h.c) == MembershipActive {
			t.Fatalf("a grant with the wrong key made X a member: %+v", rep)
		}
	})
}

// postGrant appends a grant signed by the owner's own key, but with what
// the test chooses, to x's inbox.
func (h *hostile) postGrant(x *suite.Identity, key, at, epoch [32]byte) {
	owner := suite.NewIdentity(h.owner.us)
	c := [16]byte(h.c)
	sig := ed25519.Sign(owner.SignKey, suite.GrantSigInput(x.UID, c, at, epoch, key))
	pt, _ := json.Marshal(map[string]any{"type": "grant", "c": tjson.Bytes(c[:]), "at": tjson.Bytes(at[:]),
		"epoch": tjson.Bytes(epoch[:]), "k": tjson.Bytes(key[:]), "sig": tjson.Bytes(sig)})
	env, err := suite.SealInbox(x.UKa, x.InboxTag, pt)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.raw.Append(h.t.Context(), x.InboxTag, env); err != nil {
		h.t.Fatal(err)
	}
}

func TestHostileSharingMemhub(t *testing.T) {
	srv := memhubServer(t)
	runHostile(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} }, srv.Open())
}

func TestHostileSharingDovecot(t *testing.T) {
	h := dovecotHub(t, "felix")
	raw, err := h.open(t.Context(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	runHostile(t, func(name string) Options { return Options{Name: name, Hub: h} }, raw)
}

func TestHostileSharingCyrus(t *testing.T) {
	h, raw, _, _ := cyrusJMAP(t, "elena")
	runHostile(t, func(name string) Options { return Options{Name: name, Hub: h} }, raw)
}

var _ = strings.Cut

// A join request replayed after the joiner was removed is not taken again:
// the invite is closed for good once anyone it admitted was removed
// (§11.1, §11.3).
func TestReplayedJoinAfterRemoval(t *testing.T) {
	srv := memhubServer(t)
	raw := srv.Open()
	h := newHostile(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} }, raw)
	link, _, inv := h.invite(InviteOptions{Link: true})
	ben := h.device("ben")
	if _, err := ben.Join(t.Context(), link.Payload, "Ben"); err != nil {
		t.Fatal(err)
	}
	syncT(t, ben)
	// The hostile participant keeps a copy of Ben's request.
	ch, err := raw.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		if a.Channel == inv.Tag {
			ids = append(ids, a.ID)
		}
	}
	bodies, err := raw.Fetch(t.Context(), ids)
	if err != nil || len(bodies) != 1 {
		t.Fatalf("capturing the request: %v, %d", err, len(bodies))
	}
	syncT(t, h.owner)
	reqs := requestsT(t, h.owner, h.c)
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	if err := h.owner.Approve(t.Context(), reqs[0].ID); err != nil {
		t.Fatal(err)
	}
	syncT(t, ben)
	if err := h.owner.RemoveMember(t.Context(), h.c, ben.UserID()); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Append(t.Context(), inv.Tag, bodies[0].Envelope); err != nil {
		t.Fatal(err)
	}
	rep := syncT(t, h.owner)
	if h.members() != 1 || len(requestsT(t, h.owner, h.c)) != 0 || rep.Declined != 1 {
		t.Fatalf("the replayed request: %+v, %d members, %d requests", rep, h.members(), len(requestsT(t, h.owner, h.c)))
	}
}

// A member whose grant was lost learns of the new epoch from the
// announcement, waits, asks the owner with a key request (§11.4), and gets
// the key; a removed user who asks gets no key.
func TestKeyRequestAfterLostGrant(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	now := time.Now()
	s.be.eng.SetClock(func() time.Time { return now })
	// Ben becomes a writer, then Jesper removes Aimee; a vandal destroys
	// Ben's inbox messages before Ben reads them.
	if err := s.j1.SetRole(t.Context(), s.c, s.be.UserID(), RoleWriter); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.be)
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	v := srv.Open()
	ch, _ := v.Changes(t.Context(), nil)
	var inbox []hub.ID
	for _, a := range ch.Added {
		if a.Channel == suite.InboxTag([32]byte(s.be.UserID())) {
			inbox = append(inbox, a.ID)
		}
	}
	if len(inbox) == 0 {
		t.Fatal("no grant to lose")
	}
	v.Destroy(t.Context(), inbox)
	syncT(t, s.be)
	item := RecordID{7}
	if err := s.be.SetString(s.c, item, "title", "x"); CodeOf(err) != CodeNotWritable {
		t.Fatalf("Ben wrote without the new key: %v", err)
	}
	now = now.Add(11 * time.Minute)
	syncT(t, s.be) // starts waiting
	now = now.Add(11 * time.Minute)
	syncT(t, s.be) // asks
	syncT(t, s.j1) // answers with the key
	syncT(t, s.be)
	if err := s.be.SetString(s.c, item, "title", "after the key request"); err != nil {
		t.Fatalf("Ben still has no key after asking: %v", err)
	}
}
