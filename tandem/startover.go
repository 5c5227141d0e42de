package tandem

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// StartedOver is what StartOver did.
type StartedOver struct {
	// Device is the new identity, open in the new directory. Its BackupKey
	// is the new backup key, to show once (§6.1 step 4).
	Device *Device
	// Copies are the user's own collections and their copies (§11.8).
	Copies []CollectionCopy
	// AskAgain are the other people's collections the old identity is a
	// member of or has asked to join, and any whose owner is not known yet
	// (roster not arrived): the user asks their owners to be invited again
	// (§6.4, §13.2). Collections the user left or was removed from are not
	// listed.
	AskAgain []CollectionID
}

// CollectionCopy is one of the user's own collections copied to the new
// identity.
type CollectionCopy struct {
	From, To CollectionID
	Name     string
	Records  int // records copied
}

// StartOver is "Start over on this device" (§6.4, §13.2), for when a
// device or the backup key is in someone else's hands: a new identity is
// created in dir, which must be new or empty (CodeExists if it holds a
// device), with its own secret, device ID and home. Every collection the
// user owns — its roster's owner is this user — is copied into a new
// collection of the new identity, with the same name and record IDs, each
// record's current values and set elements written anew by the new
// identity (§11.8: deleted records, tombstones and the old signatures are
// not carried; of concurrent values, the first is kept). Deleted
// collections are left out. Nothing changes for the old identity or on
// the hub; the new device publishes at its next Sync.
//
// Zero fields of opts are taken from d: Name, Hub (or Store), Logger,
// HoldFor. If copying fails, what was created in dir is removed.
// Choices the spec leaves open: docs/decisions/tandem-start-over.md.
func (d *Device) StartOver(ctx context.Context, dir string, opts Options) (*StartedOver, error) {
	eng, err := d.engine()
	if err != nil {
		return nil, err
	}
	if filepath.Clean(dir) == filepath.Clean(d.dir) {
		return nil, newErr(CodeExists, nil, "start over in a new directory, not in this device's own")
	}
	existed, err := startOverDir(dir)
	if err != nil {
		return nil, err
	}
	plan := d.planStartOver(eng)
	opts = d.inherit(opts, plan)
	nd, err := open(ctx, dir, opts, nil)
	if err != nil {
		return nil, err
	}
	out := &StartedOver{Device: nd, AskAgain: plan.others}
	for _, c := range plan.own {
		cp, err := d.copyInto(nd, c)
		if err != nil {
			nd.Close()
			removeStartOver(dir, existed)
			return nil, err
		}
		out.Copies = append(out.Copies, cp)
	}
	return out, nil
}

// startOverPlan sorts the followed collections.
type startOverPlan struct {
	own, others []CollectionID
	name        string // the user's name in the first own collection's roster
}

func (d *Device) planStartOver(eng *client.Device) startOverPlan {
	var p startOverPlan
	uid := eng.UID()
	for _, c := range d.Collections() {
		v, err := eng.RosterView(client.CollectionID(c))
		switch {
		case err != nil:
		case !v.Followed:
			p.others = append(p.others, c)
		case v.Deleted:
		case v.Owner == uid:
			p.own = append(p.own, c)
			if m, ok := v.Member(uid); ok && p.name == "" {
				p.name = m.Name
			}
		default:
			p.others = append(p.others, c)
		}
	}
	// Of others' collections, those the user is in or has asked to join;
	// not those they left or were removed from.
	p.others = slices.DeleteFunc(p.others, func(c CollectionID) bool {
		m, err := d.Membership(c)
		return err != nil || m != MembershipActive && m != MembershipWaiting
	})
	return p
}

// inherit fills opts's zero fields from d.
func (d *Device) inherit(opts Options, p startOverPlan) Options {
	if opts.Name == "" {
		opts.Name = d.opts.Name
	}
	if opts.Name == "" {
		opts.Name = p.name
	}
	if opts.Hub.IsZero() && opts.Store == nil {
		opts.Hub, opts.Store = d.Hub(), d.opts.Store
	}
	if opts.Logger == nil {
		opts.Logger = d.log
	}
	if opts.HoldFor == 0 {
		opts.HoldFor = d.opts.HoldFor
	}
	return opts
}

// copyInto writes collection c's current state into a new collection of
// nd (§11.8).
func (d *Device) copyInto(nd *Device, c CollectionID) (CollectionCopy, error) {
	cp := CollectionCopy{From: c}
	if names, err := d.Name(c); err == nil && len(names) > 0 {
		cp.Name = names[0].String()
	}
	recs, err := d.Records(c)
	if err != nil {
		return cp, err
	}
	if cp.To, err = nd.NewCollection(cp.Name); err != nil {
		return cp, err
	}
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		if err := copyRecord(nd, cp.To, r); err != nil {
			return cp, err
		}
		cp.Records++
	}
	return cp, nil
}

func copyRecord(nd *Device, to CollectionID, r Record) error {
	fields := make([]string, 0, len(r.Fields))
	for f := range r.Fields {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		fl := r.Fields[f]
		if len(fl.Values) > 0 {
			if err := nd.Set(to, r.ID, f, fl.Values[0].Bytes); err != nil {
				return err
			}
		}
		for _, e := range fl.Elements {
			if err := nd.AddElement(to, r.ID, f, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// startOverDir checks that dir can receive a new device: it is absent (its
// parent existing) or an empty directory. It reports whether dir exists.
func startOverDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, parentExists(dir)
	case err != nil:
		return false, newErr(CodeInvalid, err, "%s is not a directory Ferry can use", dir)
	case len(entries) > 0:
		return true, newErr(CodeExists, nil, "%s is not empty: start over in a new, empty directory", dir)
	}
	return true, nil
}

// removeStartOver removes what open created in dir, which was empty or absent.
func removeStartOver(dir string, existed bool) {
	if !existed {
		os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
