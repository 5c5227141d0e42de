package tandem

import (
	"bytes"
	"testing"
	"time"
)

// FuzzPairPayload feeds the QR payload reader anything a camera could
// read: it never panics, and what it accepts reads back the same after
// writing it again.
func FuzzPairPayload(f *testing.F) {
	pl := pairPayload{hub: IMAPHub("imap.example.com", 993, "jesper", "pw"), uid: [32]byte{1}, p: [32]byte{2}, exp: time.UnixMilli(1764590000000)}
	s, _ := pl.encode()
	f.Add(s)
	pl.hub = JMAPHub("https://api.example.com/jmap/session", "tok")
	s, _ = pl.encode()
	f.Add(s)
	pl.hub = Hub{}
	s, _ = pl.encode()
	f.Add(s)
	f.Add(`{"t":"pair","v":1,"u":"AA","u":"AA"}`)
	f.Add(`{"t":"join","v":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		pl, err := parsePairPayload(s)
		if err != nil {
			if CodeOf(err) != CodeInvalid {
				t.Fatalf("refusal with code %v", CodeOf(err))
			}
			return
		}
		again, err := pl.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := parsePairPayload(again)
		if err != nil {
			t.Fatalf("re-encoded payload refused: %v\n%s", err, again)
		}
		if back.uid != pl.uid || back.p != pl.p || !back.exp.Equal(pl.exp) || back.hub != pl.hub {
			t.Fatalf("round trip changed the payload: %+v → %+v", pl, back)
		}
	})
}

// FuzzPairMessage feeds the pairing channel's plaintext reader anything
// someone holding P could post: it never panics, accepts exactly one kind,
// and what it accepts reads back the same.
func FuzzPairMessage(f *testing.F) {
	for _, m := range []pairMsg{
		{kind: pairRequest, name: "Jesper's laptop", ek: [32]byte{1}},
		{kind: pairChallenge, ek: [32]byte{1}, n: [16]byte{2}, sig: [64]byte{3}},
		{kind: pairReply, ek: [32]byte{1}, sealed: make([]byte, 80)},
	} {
		b, _ := m.encode()
		f.Add(b)
	}
	f.Add([]byte(`{"name":"a","name":"b","ek":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parsePairMsg(b)
		if err != nil {
			return
		}
		if m.kind < pairRequest || m.kind > pairReply || len(m.name) > maxPairName || len(m.sealed) > maxPairReply {
			t.Fatalf("accepted %+v", m)
		}
		again, err := m.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := parsePairMsg(again)
		if err != nil {
			t.Fatalf("re-encoded message refused: %v", err)
		}
		if back.kind != m.kind || back.name != m.name || back.ek != m.ek || back.n != m.n || back.sig != m.sig || !bytes.Equal(back.sealed, m.sealed) {
			t.Fatalf("round trip changed the message: %+v → %+v", m, back)
		}
	})
}
