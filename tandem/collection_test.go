package tandem

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// Every Device method that takes a CollectionID (after a context, if it
// takes one) reports a collection the device does not follow with the one error of
// noCollection: CodeNotFound and the same message
// (docs/decisions/tandem-collection-api.md).
func TestUnknownCollectionOneError(t *testing.T) {
	srv := memhub.NewServer()
	d := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer d.Close()
	ctx := t.Context()
	if _, err := d.NewCollection("Groceries"); err != nil {
		t.Fatal(err)
	}
	c := CollectionID{0xfe}
	r := RecordID{1}
	calls := map[string]func() error{
		"Name":             func() error { _, err := d.Name(c); return err },
		"Rename":           func() error { return d.Rename(c, "x") },
		"NewRecord":        func() error { _, err := d.NewRecord(c, map[string][]byte{"a": nil}); return err },
		"Set":              func() error { return d.Set(c, r, "a", nil) },
		"SetString":        func() error { return d.SetString(c, r, "a", "") },
		"AddElement":       func() error { return d.AddElement(c, r, "a", []byte("e")) },
		"RemoveElement":    func() error { return d.RemoveElement(c, r, "a", []byte("e")) },
		"Delete":           func() error { return d.Delete(c, r) },
		"Record":           func() error { _, err := d.Record(c, r); return err },
		"Records":          func() error { _, err := d.Records(c); return err },
		"Refused":          func() error { _, err := d.Refused(c); return err },
		"DiscardRefused":   func() error { _, err := d.DiscardRefused(c); return err },
		"RemoveMember":     func() error { return d.RemoveMember(ctx, c, UserID{2}) },
		"SetRole":          func() error { return d.SetRole(ctx, c, UserID{2}, RoleReader) },
		"NewKey":           func() error { return d.NewKey(ctx, c) },
		"MakePrivate":      func() error { return d.MakePrivate(ctx, c) },
		"CloseInvites":     func() error { _, err := d.CloseInvites(c); return err },
		"DeleteCollection": func() error { return d.DeleteCollection(ctx, c) },
		"CopyCollection":   func() error { _, err := d.CopyCollection(c, "copy"); return err },
		"FinishChange":     func() error { return d.FinishChange(ctx, c) },
		"DiscardChange":    func() error { return d.DiscardChange(ctx, c) },
		"Invite":           func() error { _, err := d.Invite(c, InviteOptions{}); return err },
		"Members":          func() error { _, err := d.Members(c); return err },
		"Leave":            func() error { return d.Leave(c) },
		"CollectionState":  func() error { _, err := d.CollectionState(c); return err },
		"Requests":         func() error { _, err := d.Requests(c); return err },
		"PendingLeaves":    func() error { _, err := d.PendingLeaves(c); return err },
		"OpenInvites":      func() error { _, err := d.OpenInvites(c); return err },
		"Role":             func() error { _, err := d.Role(c); return err },
		"Removed":          func() error { _, err := d.Removed(c); return err },
		"Membership":       func() error { _, err := d.Membership(c); return err },
		"WhyDeclined":      func() error { _, err := d.WhyDeclined(c); return err },
		"ChangeInFlight":   func() error { _, _, err := d.ChangeInFlight(c); return err },
	}
	for _, name := range perCollectionMethods() {
		if calls[name] == nil {
			t.Errorf("%s takes a CollectionID and is not checked here", name)
		}
	}
	if len(calls) != 33 {
		t.Errorf("%d per-collection methods checked, want 33", len(calls))
	}
	for name, call := range calls {
		err := call()
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeNotFound || e.Message != msgNoCollection {
			t.Errorf("%s on an unknown collection: %v; want CodeNotFound, %q", name, err, msgNoCollection)
		}
	}
	if n := len(d.Collections()); n != 1 {
		t.Fatalf("%d collections after the refused calls, want 1", n)
	}
}

// perCollectionMethods names Device's exported methods whose first
// argument, after a context, is a CollectionID.
func perCollectionMethods() []string {
	ctxType := reflect.TypeFor[context.Context]()
	idType := reflect.TypeFor[CollectionID]()
	var out []string
	dt := reflect.TypeFor[*Device]()
	for i := range dt.NumMethod() {
		m := dt.Method(i)
		in := 1 // the receiver
		if m.Type.NumIn() > in && m.Type.In(in) == ctxType {
			in++
		}
		if m.Type.NumIn() > in && m.Type.In(in) == idType {
			out = append(out, m.Name)
		}
	}
	return out
}
