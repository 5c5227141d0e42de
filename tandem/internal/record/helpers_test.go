package record

import (
	"crypto/ed25519"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// testScope is the collection every test state belongs to.
var testScope = [16]byte{0xc0, 0x11}

func testValidator() *Validator {
	return NewValidator(Rules{Scope: testScope, Names: []string{"settings"}})
}

// dev returns a device ID with first byte i.
func dev(i int) suite.DeviceID { return suite.DeviceID{byte(i)} }

// recID returns a record ID with first byte i.
func recID(i int) [16]byte { return [16]byte{0x5e, byte(i)} }

func dot(d int, millis uint64, counter uint16) suite.Dot {
	return suite.Dot{Device: dev(d), HLC: suite.HLC{Millis: millis, Counter: counter}}
}

// vv builds a sorted version vector from dots, keeping the largest per
// device.
func vv(dots ...suite.Dot) suite.VV {
	var v suite.VV
	for _, d := range dots {
		v = vvJoinDot(v, d)
	}
	if v == nil {
		v = suite.VV{}
	}
	return v
}

// rawWrite makes a write the merge layer accepts without a signature: its ID
// is the real write ID of its sigInput, whose ref encodes the epoch. Merge-layer tests use it to run many
// schedules cheaply; the validity tests and some convergence schedules sign.
func rawWrite(tb testing.TB, body suite.WriteBody, epoch uint64) *Write {
	tb.Helper()
	body.Scope = testScope
	body.Ref[31] = byte(epoch) + 1 // the epoch follows from the ref (§8.3)
	si, err := body.SigInput()
	if err != nil {
		tb.Fatalf("sigInput: %v", err)
	}
	return &Write{body: cloneBody(&body), id: suite.WriteID(si), epoch: epoch, ok: true}
}

// key returns a deterministic user signing key for test user i.
func key(i int) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte{'u', byte(i)})
	return ed25519.NewKeyFromSeed(seed[:])
}

func pubOf(k ed25519.PrivateKey) [32]byte { return [32]byte(k.Public().(ed25519.PublicKey)) }

// fixedClock returns a clock reading wall time t (ms) from *t.
func fixedClock(t *int64) *Clock {
	return NewClock(suite.HLC{}, func() time.Time { return time.UnixMilli(*t) })
}

// writer returns a Writer for user u on device d in epoch e with ref r.
func writer(u, d int, e uint64, now *int64) *Writer {
	return &Writer{Key: key(u), Device: dev(d), Clock: fixedClock(now), Ref: [32]byte{byte(e)}, Epoch: e}
}

// mustBuild builds c on s and adds it, failing the test on error.
func mustBuild(tb testing.TB, s *State, w *Writer, c Change) *Write {
	tb.Helper()
	x, _, err := s.Build(w, c)
	if err != nil {
		tb.Fatalf("build %+v: %v", c, err)
	}
	if !s.Add(x) {
		tb.Fatalf("own write not kept")
	}
	return x
}

// encode returns s's canonical bytes.
func encode(tb testing.TB, s *State) []byte {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func assign(r [16]byte, f, v string) Change {
	return Change{Record: r, Field: f, Op: suite.OpAssign, Value: []byte(v)}
}

func add(r [16]byte, f, e string) Change {
	return Change{Record: r, Field: f, Op: suite.OpAdd, Element: []byte(e)}
}

func remove(r [16]byte, f, e string) Change {
	return Change{Record: r, Field: f, Op: suite.OpRemove, Element: []byte(e)}
}

func del(r [16]byte) Change { return Change{Record: r, Op: suite.OpDelete} }
