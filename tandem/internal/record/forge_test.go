package record

import "testing"

// A Write that no constructor made (a literal or zero value) and a write of
// another scope are refused by State.Add, and the state still encodes and
// decodes (issue 10: "record.State.Add(&record.Write{}) returns true and the
// state no longer decodes").
func TestAddRefusesForgedAndForeignWrites(t *testing.T) {
	s := signedState(t)
	before, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if s.Add(&Write{}) {
		t.Fatal("Add(&Write{}) changed the state")
	}
	if s.Add(nil) {
		t.Fatal("Add(nil) changed the state")
	}
	var w *Write
	for x := range s.All() {
		w = x
		break
	}
	foreign := *w
	foreign.body.Scope[0] ^= 1
	other := NewState(NewValidator(Rules{Scope: foreign.body.Scope}))
	if other.Add(w) {
		t.Fatal("a write of another scope was added")
	}
	after, _ := s.MarshalBinary()
	if string(after) != string(before) {
		t.Fatal("state changed")
	}
	if _, err := DecodeState(after, s.Validator()); err != nil {
		t.Fatalf("state no longer decodes: %v", err)
	}
}
