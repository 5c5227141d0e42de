package tandem

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// Every Device method that takes a CollectionID and returns an error
// reports a collection the device does not follow with the one error of
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
