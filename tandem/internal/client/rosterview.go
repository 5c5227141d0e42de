package client

import (
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// Role is a member's role in a collection's roster (§8.1).
type Role = roster.Role

// The roles (§8.1).
const (
	RoleOwner  = roster.RoleOwner
	RoleWriter = roster.RoleWriter
	RoleReader = roster.RoleReader
)

// ErrStateMismatch: a sharing change does not apply to the roster as it
// stands, e.g. it names someone who is not a member (§8.2).
var ErrStateMismatch = roster.ErrStateMismatch

// Status is how the device follows a collection's roster chain (§9.4).
type Status = roster.Status

// The chain statuses package tandem tells apart; any other means dead
// (§11.8).
const (
	StatusWaiting   = roster.StatusWaiting
	StatusFollowing = roster.StatusFollowing
	StatusStalled   = roster.StatusStalled
)

// Member is one entry of a roster (§8.1).
type Member struct {
	User [32]byte
	Name string
	Role Role
}

// RosterView is what package tandem reads of a collection's followed
// roster (§8, §9.4), in plain types.
type RosterView struct {
	Followed bool // a roster is followed (false while the device waits to join)
	Deleted  bool // the owner deleted the collection (§11.9)
	Owner    [32]byte
	Members  []Member // in roster order
}

// RosterView returns collection c's followed roster.
func (d *Device) RosterView(c CollectionID) (RosterView, error) {
	var v RosterView
	err := d.View(c, func(_ *record.State, r *roster.Roster, _ roster.Status) {
		if r == nil {
			return
		}
		st := r.State()
		v = RosterView{Followed: true, Deleted: st.Deleted, Owner: r.Owner()}
		for _, m := range st.Members {
			v.Members = append(v.Members, Member{User: m.UID, Name: m.Name, Role: m.Role})
		}
	})
	return v, err
}

// Standing is how a collection stands for one user: its roster chain's
// status, whether its owner deleted it (§11.9), and whether the user was
// removed from it (§13.2).
type Standing struct {
	Status  Status
	Deleted bool
	Removed bool // an earlier statement listed the user, the current state does not
}

// Standing returns how collection c stands for user u, read under one
// lock.
func (d *Device) Standing(c CollectionID, u [32]byte) (Standing, error) {
	var s Standing
	err := d.View(c, func(_ *record.State, r *roster.Roster, st roster.Status) {
		s.Status = st
		if r == nil {
			return
		}
		state := r.State()
		s.Deleted = state.Deleted
		_, listed := state.Member(u)
		s.Removed = !listed && everListed(r, u)
	})
	return s, err
}

// Member returns user u's entry in the view, if listed.
func (v RosterView) Member(u [32]byte) (Member, bool) {
	for _, m := range v.Members {
		if m.User == u {
			return m, true
		}
	}
	return Member{}, false
}
