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

// Member returns user u's entry in the view, if listed.
func (v RosterView) Member(u [32]byte) (Member, bool) {
	for _, m := range v.Members {
		if m.User == u {
			return m, true
		}
	}
	return Member{}, false
}
