package record

import "testing"

func TestReloadRoundTrip(t *testing.T) {
	s := signedState(t)
	r := NewState(s.Validator())
	for w := range s.All() {
		b := AppendStored(nil, w)
		x, err := s.Validator().Reload(b, w.ID())
		if err != nil {
			t.Fatal(err)
		}
		if !r.Add(x) {
			t.Fatal("reloaded write not added")
		}
		if _, err := s.Validator().Reload(b[:len(b)-1], w.ID()); err == nil {
			t.Fatal("truncated stored write accepted")
		}
	}
	a, _ := s.MarshalBinary()
	b, _ := r.MarshalBinary()
	if string(a) != string(b) {
		t.Fatal("reloaded state differs")
	}
	if _, err := DecodeState(b, s.Validator()); err != nil {
		t.Fatal(err)
	}
}
