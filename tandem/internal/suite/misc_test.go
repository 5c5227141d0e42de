package suite

import (
	"errors"
	"testing"
)

func TestIdentityShapes(t *testing.T) {
	id := NewIdentity(seed("test", 7, "us"))
	k := id.AgreeKey.Bytes()
	if k[0]&7 != 0 || k[31]&0x80 != 0 || k[31]&0x40 == 0 {
		t.Fatalf("UKa not clamped: %x", k)
	}
	inv, pr := NewInvite(seed("test", 8, "s")), NewPairing(seed("test", 9, "p"))
	for _, tag := range []string{id.HomeTag, id.InboxTag, inv.Tag, pr.Tag, CollectionTag(id.HomeKey, id.UID)} {
		if !ValidTag(tag) {
			t.Errorf("tag %q is not 32 characters a-z2-7", tag)
		}
	}
	if id.HomeTag == id.InboxTag || pr.Key == id.HomeKey {
		t.Fatal("distinct channels share a tag or key")
	}
	for _, bad := range []string{"", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz23456", "abcdefghijklmnopqrstuvwxyz234568"} {
		if ValidTag(bad) {
			t.Errorf("ValidTag(%q)", bad)
		}
	}
}

func TestHLCCompareAndOps(t *testing.T) {
	hs := []HLC{{0, 0}, {0, 1}, {1, 0}, {1, 65535}, {MaxHLCMillis, 0}}
	for i := range hs {
		for j := range hs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := hs[i].Compare(hs[j]); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", hs[i], hs[j], got, want)
			}
		}
	}
	w := &WriteBody{Op: 0}
	if _, err := w.SigInput(); !errors.Is(err, ErrBadOp) {
		t.Fatalf("op 0: %v", err)
	}
	w = &WriteBody{Op: OpAssign, Dot: Dot{HLC: HLC{Millis: MaxHLCMillis + 1}}}
	if _, err := w.SigInput(); !errors.Is(err, ErrHLCRange) {
		t.Fatalf("millis above 48 bits: %v", err)
	}
	w = &WriteBody{Op: OpAssign, Base: VV{{Device: DeviceID{1}}, {Device: DeviceID{1}}}}
	if _, err := w.SigInput(); !errors.Is(err, ErrVVUnsorted) {
		t.Fatalf("duplicate device: %v", err)
	}
	w = &WriteBody{Op: OpAssign, Context: make(VV, MaxVVEntries)}
	for i := range w.Context {
		w.Context[i].Device = DeviceID{byte(i >> 8), byte(i)}
	}
	si, err := w.SigInput()
	if err != nil {
		t.Fatalf("1024 entries: %v", err)
	}
	if want := 15 + 16 + 16 + 4 + 1 + 4 + 32 + 32 + 18 + 32 + 2 + 18*MaxVVEntries + 2; len(si) != want {
		t.Fatalf("sigInput of %d bytes, want %d", len(si), want)
	}
}

func TestSignedPrefixesDistinct(t *testing.T) {
	var z16 [16]byte
	var z32 [32]byte
	seen := map[string]bool{}
	for _, b := range [][]byte{JoinSigInput(z16, z16, z32, z32, ""), InviteSigInput(z16, z16, z32),
		GrantSigInput(z32, z16, z32, z32, z32), KeyReqSigInput(z16, z32, z32), LeaveSigInput(z16, z32, z32),
		PairChallengeSigInput(z32, z32, z16)} {
		p := string(b[:len(b)-len(trimPrefix(b))])
		if seen[p] || len(p) < len("TANDEM-X-V1") {
			t.Errorf("prefix %q repeated or missing", p)
		}
		seen[p] = true
	}
}

// trimPrefix drops the leading "TANDEM-…-V1" ASCII prefix.
func trimPrefix(b []byte) []byte {
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '-' && b[i+1] == 'V' && b[i+2] == '1' {
			return b[i+3:]
		}
	}
	return b
}

// TestSigInputValueHash checks §5.5's "H(value) # value bytes; H("") for
// remove/delete": a remove or delete hashes the empty string whatever its
// Value holds, assign and add hash their Value, and lp(element) carries the
// element as given.
func TestSigInputValueHash(t *testing.T) {
	// prefix 15 || scope 16 || record 16 || lp("f") 5 || op 1 || lp(element) || H(value)
	const off = 15 + 16 + 16 + 5
	for _, op := range []Op{OpAssign, OpAdd, OpRemove, OpDelete} {
		for _, value := range [][]byte{nil, []byte("v")} {
			w := &WriteBody{Op: op, Field: "f", Element: []byte("el"), Value: value}
			si, err := w.SigInput()
			if err != nil {
				t.Fatalf("op %d: %v", op, err)
			}
			if si[off] != byte(op) || string(si[off+1:off+7]) != "\x00\x00\x00\x02el" {
				t.Errorf("op %d: op or lp(element) not in place: %x", op, si[off:off+7])
			}
			want := H(value)
			if op == OpRemove || op == OpDelete {
				want = H([]byte(""))
			}
			if got := si[off+7 : off+7+32]; string(got) != string(want[:]) {
				t.Errorf("op %d value %q: hashed value %x, want %x", op, value, got, want)
			}
		}
	}
}
