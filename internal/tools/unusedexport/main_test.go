package main

import (
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

func parsePkg(t *testing.T, path string, public bool, src ...string) *pkg {
	t.Helper()
	p := &pkg{path: path, public: public}
	for _, s := range src {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", s, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.files = append(p.files, f)
	}
	return p
}

// TestCheck: a name only its own package uses is found; one another
// package uses, a type reachable through a used function, a constant of
// that type and a String method are not.
func TestCheck(t *testing.T) {
	p := parsePkg(t, "m/p", true, `package p
type Kind int
const KindA Kind = 1
func (k Kind) String() string { return "" }
type Thing struct{ Used, Unused int }
func Make() (Thing, Kind) { return Thing{}, KindA }
func Unused() {}
func (Thing) Method() {}
var _ = Unused`)
	q := parsePkg(t, "m/q", false, `package q
import "m/p"
func f() { t, _ := p.Make(); _ = t.Used }`)
	got := check([]*pkg{p, q})
	want := []string{"m/p.Thing.Method", "m/p.Thing.Unused", "m/p.Unused"}
	if !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
}

func TestAllowKey(t *testing.T) {
	allow := map[string]string{"m/p.Thing": "r", "m/h.*": "r"}
	for f, want := range map[string]string{
		"m/p.Thing.Unused": "m/p.Thing", "m/h.Run": "m/h.*", "m/h/sub.Run": "", "m/p.Other": "",
	} {
		if got := allowKey(allow, f); got != want {
			t.Errorf("allowKey(%s) = %q, want %q", f, got, want)
		}
	}
}
