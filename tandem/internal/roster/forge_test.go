package roster

import (
	"errors"
	"testing"
)

// A Statement that NewStatement did not make is refused by Chain.Add and
// never becomes the head (issue 10: "a roster.Statement{...} literal with no
// signature is accepted by Chain.Add and becomes the head").
func TestChainRefusesUnverifiedStatement(t *testing.T) {
	f := newFixture(t)
	ch := chainOf(t, f.r0)
	head := f.r0.Head()
	forged := &Statement{id: [32]byte{1}, body: head.Body(), state: head.State()}
	forged.body.Ref = head.ID()
	if err := ch.Add(forged, Origin{}); !errors.Is(err, ErrUnverified) || !errors.Is(err, ErrRejected) {
		t.Fatalf("Add(literal) = %v, want ErrRejected and ErrUnverified", err)
	}
	if err := ch.Add(&Statement{}, Origin{}); !errors.Is(err, ErrUnverified) {
		t.Fatalf("Add(zero) = %v, want ErrUnverified", err)
	}
	r, _ := ch.Roster()
	if r.Head().ID() != head.ID() {
		t.Fatal("the forged statement became the head")
	}
}
