package tandem

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/pairing"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// eavesdropper is someone who captured the QR code: they hold P and the
// hub credential, so they can read, post and destroy on the pairing
// channel, but they do not hold the user's key.
type eavesdropper struct {
	ch  *pairing.Channel
	key ed25519.PrivateKey // their own signing key
}

func newEavesdropper(t *testing.T, s hub.Store, payload string) *eavesdropper {
	t.Helper()
	pl, err := pairing.ParsePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	return &eavesdropper{ch: pairing.NewChannel(s, pl.P, quiet()), key: key}
}

// all reads every message of the channel from the start, with its id.
func (e *eavesdropper) all(t *testing.T) (map[hub.ID]pairing.Msg, error) {
	t.Helper()
	fresh := pairing.NewChannel(e.ch.Store(), e.ch.Pairing().Secret, quiet())
	ch, err := fresh.Store().Changes(t.Context(), nil)
	if err != nil {
		return nil, err
	}
	out := map[hub.ID]pairing.Msg{}
	for _, a := range ch.Added {
		if a.Channel != fresh.Pairing().Tag {
			continue
		}
		bodies, err := fresh.Store().Fetch(t.Context(), []hub.ID{a.ID})
		if err != nil {
			return nil, err
		}
		if m, ok := fresh.Open(bodies[0]); ok {
			out[a.ID] = m
		}
	}
	return out, nil
}

func (e *eavesdropper) count(t *testing.T, k pairing.Kind) int {
	t.Helper()
	msgs, err := e.all(t)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.Kind == k {
			n++
		}
	}
	return n
}

// pairNet is where a pairing test runs: memhub, or a real server.
type pairNet struct {
	on    Options   // Hub or Store
	raw   hub.Store // a connection of the test's own
	extra time.Duration
}

func memNet() pairNet {
	srv := memhub.NewServer()
	return pairNet{on: Options{Store: memStore(srv)}, raw: srv.Open()}
}

// forPairNets runs f on memhub, Dovecot (IMAP) and Cyrus (JMAP).
func forPairNets(t *testing.T, f func(*testing.T, pairNet)) {
	t.Run("memhub", func(t *testing.T) { f(t, memNet()) })
	for _, server := range []string{"dovecot", "cyrus"} {
		t.Run(server, func(t *testing.T) {
			h, raw := pairHub(t, server)
			f(t, pairNet{on: Options{Hub: h}, raw: raw, extra: realtest.Scale(6 * time.Second)})
		})
	}
}

func (n pairNet) with(name string) Options {
	o := n.on
	o.Name, o.Logger = name, quiet()
	return o
}

// ttl is a test offer's lifetime: d, longer on a real server's round trips.
func (n pairNet) ttl(d time.Duration) time.Duration { return d + n.extra }

func pairJoinT(t *testing.T, n pairNet, dir, payload, name string) *PairingJoin {
	t.Helper()
	j, err := JoinDevice(t.Context(), dir, payload, n.with(name))
	if err != nil {
		t.Fatalf("JoinDevice %s: %v", name, err)
	}
	t.Cleanup(func() { j.Close(context.Background()) })
	return j
}

// A captured QR code used by an attacker: their request gets a challenge
// whose code differs from the real device's; approving the request with
// the real device's code hands the attacker nothing.
func TestPairingCapturedQR(t *testing.T) { forPairNets(t, testPairingCapturedQR) }

func testPairingCapturedQR(t *testing.T, n pairNet) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.addDevice(ctx, n.ttl(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	evilDir := filepath.Join(t.TempDir(), "evil")
	evil := pairJoinT(t, n, evilDir, offer.Payload(), "Jesper's phone")
	evil.j.NoSlack()
	real := pairJoinT(t, n, filepath.Join(t.TempDir(), "real"), offer.Payload(), "Jesper's phone")

	reqs := map[string]*PairingRequest{}
	for range 2 {
		r, err := offer.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reqs[r.Code()] = r
	}
	evilCode, err := evil.Code(ctx)
	if err != nil {
		t.Fatal(err)
	}
	realCode, err := real.Code(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if evilCode == realCode || reqs[evilCode] == nil || reqs[realCode] == nil {
		t.Fatalf("codes: attacker %s, real %s, offered %v", evilCode, realCode, reqs)
	}
	// The user approves the request whose code the real device shows.
	if err := reqs[realCode].Approve(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := evil.Device(ctx); CodeOf(err) != CodeExpired {
		t.Fatalf("the attacker's Device: %v, want CodeExpired", err)
	}
	if _, err := os.Stat(evilDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the attacker's side installed something")
	}
	// Nothing on the channel opens with the attacker's one-time key.
	ed := newEavesdropper(t, n.raw, offer.Payload())
	msgs, err := ed.all(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind == pairing.KindReply {
			if _, err := suite.OpenPairReply(evil.j.Key(), evil.j.Payload().UID, m.Sealed); err == nil {
				t.Fatal("a reply on the channel opens with the attacker's key")
			}
		}
	}
	b, err := real.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.UserID() != a.UserID() {
		t.Fatal("the real device is another user")
	}
}

// The real new device shows no code when its challenge is replaced: the
// attacker destroys the showing device's challenge and posts one of
// their own for the real device's key.
func TestPairingReplacedChallenge(t *testing.T) { forPairNets(t, testPairingReplacedChallenge) }

func testPairingReplacedChallenge(t *testing.T, n pairNet) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	real := pairJoinT(t, n, filepath.Join(t.TempDir(), "real"), offer.Payload(), "tablet")
	if _, err := offer.Next(ctx); err != nil {
		t.Fatal(err)
	}
	ed := newEavesdropper(t, n.raw, offer.Payload())
	msgs, err := ed.all(t)
	if err != nil {
		t.Fatal(err)
	}
	var replaced int
	for id, m := range msgs {
		if m.Kind != pairing.KindChallenge {
			continue
		}
		if err := ed.ch.Store().Destroy(ctx, []hub.ID{id}); err != nil {
			t.Fatal(err)
		}
		forged := pairing.Msg{Kind: pairing.KindChallenge, EK: m.EK}
		rand.Read(forged.N[:])
		copy(forged.Sig[:], ed25519.Sign(ed.key, suite.PairChallengeSigInput(ed.ch.Pairing().Secret, m.EK, forged.N)))
		if _, err := ed.ch.Post(ctx, forged); err != nil {
			t.Fatal(err)
		}
		replaced++
	}
	if replaced != 1 {
		t.Fatalf("replaced %d challenges, want 1", replaced)
	}
	code, err := real.Code(ctx)
	if code != "" || CodeOf(err) != CodePairing {
		t.Fatalf("Code with a forged challenge: %q, %v; want no code and CodePairing", code, err)
	}
	start := time.Now()
	if _, err := real.Device(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("Device after a forged challenge: %v, want CodePairing", err)
	}
	if time.Since(start) > realtest.Scale(time.Second) {
		t.Fatal("Device waited after a forged challenge")
	}
}

// A fourth request to one QR code gets no challenge (§6.3: at most three).
func TestPairingFourthRequestUnanswered(t *testing.T) {
	forPairNets(t, testPairingFourthRequestUnanswered)
}

func testPairingFourthRequestUnanswered(t *testing.T, n pairNet) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.addDevice(ctx, n.ttl(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	var joins []*PairingJoin
	for i := range 4 {
		joins = append(joins, pairJoinT(t, n, filepath.Join(t.TempDir(), "b"+string(rune('0'+i))), offer.Payload(), "device"))
	}
	for i := range 3 {
		if _, err := offer.Next(ctx); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if _, err := offer.Next(ctx); CodeOf(err) != CodeExpired {
		t.Fatalf("Next for the fourth request: %v, want CodeExpired", err)
	}
	answered := 0
	for _, j := range joins {
		if _, err := j.Code(ctx); err == nil {
			answered++
		} else if CodeOf(err) != CodeExpired {
			t.Fatalf("an unanswered request: %v, want CodeExpired", err)
		}
	}
	ed := newEavesdropper(t, n.raw, offer.Payload())
	if answered != 3 || ed.count(t, pairing.KindChallenge) != 3 {
		t.Fatalf("%d requests answered, %d challenges on the hub; want 3", answered, ed.count(t, pairing.KindChallenge))
	}
}

// A request with a duplicate JSON key is rejected whole: no challenge.
func TestPairingRequestDuplicateKey(t *testing.T) {
	n := memNet()
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.addDevice(ctx, n.ttl(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	ed := newEavesdropper(t, n.raw, offer.Payload())
	ek := make([]byte, 32)
	rand.Read(ek)
	pt := []byte(`{"name":"laptop","ek":"` + pairB64(ek) + `","name":"Jesper's laptop"}`)
	env, err := suite.SealEnvelope(suite.KindRequest, ed.ch.Pairing().Key, ed.ch.Pairing().Tag, pt, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ed.ch.Store().Append(ctx, ed.ch.Pairing().Tag, env); err != nil {
		t.Fatal(err)
	}
	if r, err := offer.Next(ctx); CodeOf(err) != CodeExpired {
		t.Fatalf("Next with a duplicate-key request: %v %v, want nothing until the expiry", r, err)
	}
	if n := ed.count(t, pairing.KindChallenge); n != 0 {
		t.Fatalf("%d challenges for a request with a duplicate key", n)
	}
}

// A reply sealed to the real device's key but holding another user's
// secret is ignored; the real reply that follows is taken.
func TestPairingForgedReplyIgnored(t *testing.T) {
	n := memNet()
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	real := pairJoinT(t, n, filepath.Join(t.TempDir(), "real"), offer.Payload(), "tablet")
	req, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := real.Code(ctx); err != nil {
		t.Fatal(err)
	}
	ed := newEavesdropper(t, n.raw, offer.Payload())
	var other [32]byte
	rand.Read(other[:])
	sealed, err := suite.SealPairReply(suite.NewIdentity(other), real.j.Pub())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ed.ch.Post(ctx, pairing.Msg{Kind: pairing.KindReply, EK: real.j.Pub(), Sealed: sealed}); err != nil {
		t.Fatal(err)
	}
	if err := req.Approve(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := real.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.UserID() != a.UserID() {
		t.Fatal("the new device took the forged reply's identity")
	}
}

// A request put in the real one's place (the attacker destroys the real
// device's request and posts their own under its name): the showing
// device offers the attacker's code, and the real device shows none.
func TestPairingReplacedRequest(t *testing.T) { forPairNets(t, testPairingReplacedRequest) }

func testPairingReplacedRequest(t *testing.T, n pairNet) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.addDevice(ctx, n.ttl(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	real := pairJoinT(t, n, filepath.Join(t.TempDir(), "real"), offer.Payload(), "tablet")
	ed := newEavesdropper(t, n.raw, offer.Payload())
	msgs, err := ed.all(t)
	if err != nil {
		t.Fatal(err)
	}
	for id := range msgs {
		if err := ed.ch.Store().Destroy(ctx, []hub.ID{id}); err != nil {
			t.Fatal(err)
		}
	}
	evilDir := filepath.Join(t.TempDir(), "evil")
	evil := pairJoinT(t, n, evilDir, offer.Payload(), "tablet")
	evil.j.NoSlack()
	req, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evilCode, err := evil.Code(ctx)
	if err != nil || evilCode != req.Code() {
		t.Fatalf("the attacker's code %q (%v), offered %q", evilCode, err, req.Code())
	}
	if code, err := real.Code(ctx); code != "" || CodeOf(err) != CodeExpired {
		t.Fatalf("the real device without a challenge: %q, %v; want no code, CodeExpired", code, err)
	}
}

// flakyStore fails the next appends while fail is above zero, as a hub
// that cut the connection would.
type flakyStore struct {
	hub.Store
	fail *atomic.Int32
}

func (f flakyStore) Append(ctx context.Context, channel string, env []byte) (hub.ID, error) {
	if f.fail.Add(-1) >= 0 {
		return "", fmt.Errorf("append: %w", hub.ErrUnavailable)
	}
	return f.Store.Append(ctx, channel, env)
}

// A challenge whose append fails is posted again at the next read, with
// the same nonce: the new device shows the code the showing device shows,
// and one challenge is on the hub.
func TestPairingChallengeRetried(t *testing.T) {
	srv := memhub.NewServer()
	var fail atomic.Int32
	flaky := func(context.Context) (hub.Store, error) { return flakyStore{srv.Open(), &fail}, nil }
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: flaky})
	defer a.Close()
	ctx := t.Context()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	j := pairJoinT(t, pairNet{on: Options{Store: memStore(srv)}, raw: srv.Open()}, filepath.Join(t.TempDir(), "b"), offer.Payload(), "tablet")
	fail.Store(1)
	req, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fail.Load() >= 0 {
		t.Fatal("the append never failed")
	}
	code, err := j.Code(ctx)
	if err != nil || code != req.Code() {
		t.Fatalf("code after a retried challenge: %q %v, offered %q", code, err, req.Code())
	}
	if c := newEavesdropper(t, srv.Open(), offer.Payload()).count(t, pairing.KindChallenge); c != 1 {
		t.Fatalf("%d challenges on the hub, want 1", c)
	}
}

// Junk on the pairing channel (envelopes under another key, and messages
// too large to be pairing messages), more of it than any message count,
// does not hide the real request (issue 23, defect 5).
func TestPairingJunkOnChannel(t *testing.T) { forPairNets(t, testPairingJunkOnChannel) }

func testPairingJunkOnChannel(t *testing.T, n pairNet) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	defer a.Close()
	ctx := t.Context()
	offer, err := a.addDevice(ctx, n.ttl(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	tag := pairTag(t, offer.Payload())
	var wrong [32]byte
	rand.Read(wrong[:])
	post := func(size int) {
		junk := make([]byte, size)
		rand.Read(junk)
		env, err := suite.SealEnvelope(suite.KindRequest, wrong, tag, junk, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.raw.Append(ctx, tag, env); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 {
		post(100)
	}
	for range 3 {
		post(200 << 10)
	}
	b := pairJoinT(t, n, filepath.Join(t.TempDir(), "b"), offer.Payload(), "Jesper's laptop")
	r, err := offer.Next(ctx)
	if err != nil {
		t.Fatalf("the real request behind the junk: %v", err)
	}
	code, err := b.Code(ctx)
	if err != nil || code != r.Code() {
		t.Fatalf("codes: new device %q (%v), offered %q", code, err, r.Code())
	}
	if err := r.Approve(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := b.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.UserID() != a.UserID() {
		t.Fatal("the new device is another user")
	}
}
