package pairing

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/hubdesc"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// FuzzPairPayload feeds the QR payload reader anything a camera could
// read: it never panics, and what it accepts reads back the same after
// writing it again.
func FuzzPairPayload(f *testing.F) {
	pl := Payload{Hub: hubdesc.IMAP("imap.example.com", 993, "jesper", "pw"), UID: [32]byte{1}, P: [32]byte{2}, Exp: time.UnixMilli(1764590000000)}
	s, _ := pl.Encode()
	f.Add(s)
	pl.Hub = hubdesc.JMAP("https://api.example.com/jmap/session", "tok")
	s, _ = pl.Encode()
	f.Add(s)
	pl.Hub = hubdesc.Desc{}
	s, _ = pl.Encode()
	f.Add(s)
	f.Add(`{"t":"pair","v":1,"u":"AA","u":"AA"}`)
	f.Add(`{"t":"join","v":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		pl, err := ParsePayload(s)
		if err != nil {
			if !errors.Is(err, ErrNotPayload) && !errors.Is(err, ErrNewerPayload) && !errors.Is(err, ErrPayloadHub) {
				t.Fatalf("refusal without its sentinel: %v", err)
			}
			return
		}
		again, err := pl.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePayload(again)
		if err != nil {
			t.Fatalf("re-encoded payload refused: %v\n%s", err, again)
		}
		if back.UID != pl.UID || back.P != pl.P || !back.Exp.Equal(pl.Exp) || back.Hub != pl.Hub {
			t.Fatalf("round trip changed the payload: %+v → %+v", pl, back)
		}
	})
}

// FuzzPairMessage feeds the pairing channel's plaintext reader anything
// someone holding P could post: it never panics, accepts exactly one kind,
// and what it accepts reads back the same.
func FuzzPairMessage(f *testing.F) {
	for _, m := range []Msg{
		{Kind: KindRequest, Name: "Jesper's laptop", EK: [32]byte{1}},
		{Kind: KindChallenge, EK: [32]byte{1}, N: [16]byte{2}, Sig: [64]byte{3}},
		{Kind: KindReply, EK: [32]byte{1}, Sealed: make([]byte, 80)},
		{Kind: KindDecline, EK: [32]byte{1}, Sig: [64]byte{3}},
	} {
		b, _ := m.Encode()
		f.Add(b)
	}
	f.Add([]byte(`{"name":"a","name":"b","ek":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMsg(b)
		if err != nil {
			return
		}
		if m.Kind < KindRequest || m.Kind > KindDecline || len(m.Name) > MaxName || len(m.Sealed) > maxReply {
			t.Fatalf("accepted %+v", m)
		}
		again, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseMsg(again)
		if err != nil {
			t.Fatalf("re-encoded message refused: %v", err)
		}
		if back.Kind != m.Kind || back.Name != m.Name || back.EK != m.EK || back.N != m.N || back.Sig != m.Sig || !bytes.Equal(back.Sealed, m.Sealed) {
			t.Fatalf("round trip changed the message: %+v → %+v", m, back)
		}
	})
}

// A request whose name could fake the approval line (a newline, a
// bidirectional override, more than MaxName bytes) is refused.
func TestNameControls(t *testing.T) {
	for _, name := range []string{"laptop\nCode 123 456", "laptop\u202e654 321", strings.Repeat("a", MaxName+1)} {
		if NameOK(name) {
			t.Fatalf("name %q accepted", name)
		}
		b, err := json.Marshal(map[string]string{"name": name, "ek": tjson.B64U(make([]byte, 32))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseMsg(b); err == nil {
			t.Fatalf("request with name %q read", name)
		}
	}
	if !NameOK("Jesper's 👨‍👩‍👧 iPad") {
		t.Fatal("an emoji sequence refused")
	}
}

// A decline has only "ek" and "decline": a version that knows the three
// messages of §6.3 only finds the members of no one kind in it and ignores
// it; and a decline mixed with another kind's members is refused
// (docs/decisions/tandem-pairing-refusal.md).
func TestDeclineMembers(t *testing.T) {
	b, err := Msg{Kind: KindDecline, EK: [32]byte{1}, Sig: [64]byte{2}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		t.Fatal(err)
	}
	if len(members) != 2 || members["ek"] == nil || members["decline"] == nil {
		t.Fatalf("a decline's members: %s", b)
	}
	m, err := ParseMsg(b)
	if err != nil || m.Kind != KindDecline || m.Sig != [64]byte{2} {
		t.Fatalf("decline read as %+v, %v", m, err)
	}
	sig := tjson.B64U(make([]byte, 64))
	for _, extra := range []string{`"name":"a"`, `"n":"` + tjson.B64U(make([]byte, 16)) + `"`, `"sig":"` + sig + `"`, `"reply":"AAAA"`} {
		mixed := `{"ek":"` + tjson.B64U(make([]byte, 32)) + `","decline":"` + sig + `",` + extra + `}`
		if m, err := ParseMsg([]byte(mixed)); err == nil {
			t.Fatalf("%s read as %+v", mixed, m)
		}
	}
}
