package webapp

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"rsc.io/qr"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/tandem"
)

func (s *server) shareRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /l/{list}/share", s.page("share", s.sharePage))
	m.HandleFunc("POST /l/{list}/invite", s.invite)
	m.HandleFunc("POST /l/{list}/approve", s.act(s.decide(true)))
	m.HandleFunc("POST /l/{list}/decline", s.act(s.decide(false)))
	m.HandleFunc("POST /l/{list}/role", s.act(s.setRole))
	m.HandleFunc("POST /l/{list}/remove", s.act(s.removeMember))
	m.HandleFunc("POST /l/{list}/close-invites", s.act(s.closeInvites))
}

type requestView struct {
	ID, Name          string
	Role              tandem.Role
	PreviouslyRemoved bool
}

type inviteView struct {
	Role    tandem.Role
	Auto    bool // the QR form: let in at once
	Uses    int
	Expires time.Time
}

type shareBody struct {
	List     listView
	Members  []memberView
	Leaves   []memberView
	Requests []requestView
	Invites  []inviteView
	New      *newInvite // the invite just made
	InFlight string
}

// newInvite is an invite just made, shown once on the share page.
type newInvite struct {
	Link, QR string // QR: the image's id
	Text     string // what the QR code holds
	Auto     bool
	Role     tandem.Role
	Expires  time.Time
}

// known is err, unless it says the list is not on this device (deleted
// since the page was asked for): then the share page shows it empty.
func known(err error) error {
	if tandem.CodeOf(err) == tandem.CodeNotFound {
		return nil
	}
	return err
}

func (s *server) sharePage(r *http.Request, p *tandemcli.Profile) (string, any, error) {
	d := p.Device()
	c, l, err := listOfReq(r, d)
	if err != nil {
		return "", nil, err
	}
	b := shareBody{List: l}
	ms, err := d.Members(c)
	if err := known(err); err != nil {
		return "", nil, err
	}
	leaves, err := d.PendingLeaves(c)
	if err := known(err); err != nil {
		return "", nil, err
	}
	reqs, err := d.Requests(c)
	if err := known(err); err != nil {
		return "", nil, err
	}
	invites, err := d.OpenInvites(c)
	if err := known(err); err != nil {
		return "", nil, err
	}
	me := d.UserID()
	for _, m := range ms {
		b.Members = append(b.Members, memberView{Ref: userRef(m.User), Name: m.Name, Role: m.Role, You: m.User == me})
	}
	for _, m := range leaves {
		b.Leaves = append(b.Leaves, memberView{Ref: userRef(m.User), Name: m.Name, Role: m.Role})
	}
	for _, q := range reqs {
		b.Requests = append(b.Requests, requestView{ID: q.ID, Name: q.Name, Role: q.Role, PreviouslyRemoved: q.PreviouslyRemoved})
	}
	for _, i := range invites {
		b.Invites = append(b.Invites, inviteView{Role: i.Role, Auto: i.AutoApprove, Uses: i.MaxUses, Expires: i.Expires})
	}
	b.InFlight, _, _ = d.ChangeInFlight(c)
	if id := r.URL.Query().Get("invite"); id != "" {
		s.mu.Lock()
		if inv, ok := s.shown[id]; ok && inv.list == c {
			b.New = &inv.view
		}
		s.mu.Unlock()
	}
	return "Share " + l.Name, b, nil
}

// shownInvite is an invite the owner made in this app, kept in memory
// for its page and QR image.
type shownInvite struct {
	list tandem.CollectionID
	view newInvite
}

// invite makes an invite (a QR code for someone here, or a link to send)
// and shows it on the share page.
func (s *server) invite(w http.ResponseWriter, r *http.Request) {
	next := "/"
	err := s.live.with(r.Context(), useWait, func(p *tandemcli.Profile) error {
		d := p.Device()
		c, _, err := listOfReq(r, d)
		if err != nil {
			return err
		}
		next = "/l/" + c.String() + "/share"
		o := tandem.InviteOptions{Link: r.PostFormValue("form") == "link", Role: tandem.RoleWriter}
		if r.PostFormValue("role") == string(tandem.RoleReader) {
			o.Role = tandem.RoleReader
		}
		inv, err := d.Invite(c, o)
		if err != nil {
			return err
		}
		id := randomToken()
		s.mu.Lock()
		s.shown[id] = shownInvite{list: c, view: newInvite{Link: inv.Link, QR: id, Text: inv.Payload, Auto: !o.Link, Role: o.Role, Expires: inv.Expires}}
		s.mu.Unlock()
		next += "?invite=" + id
		return nil
	})
	if err != nil {
		s.setFlash(humanError(err))
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// qrImage is the QR code of an invite made here, as a PNG.
func (s *server) qrImage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	inv, ok := s.shown[r.PathValue("id")]
	s.mu.Unlock()
	text := inv.view.Text
	if !ok {
		text, ok = s.pairingText(r.PathValue("id"))
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	code, err := qr.Encode(text, qr.M)
	if err != nil {
		http.Error(w, "The code is too long for a QR image; use the text below it.", http.StatusInternalServerError)
		return
	}
	code.Scale = 6
	w.Header().Set("Content-Type", "image/png")
	w.Write(code.PNG())
}

func (s *server) decide(approve bool) actFn {
	return func(r *http.Request, p *tandemcli.Profile) (string, string, error) {
		next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
			id := r.PostFormValue("request")
			reqs, err := d.Requests(c)
			if err != nil {
				return "", err
			}
			i := slices.IndexFunc(reqs, func(q tandem.JoinRequest) bool { return q.ID == id })
			if i < 0 {
				return "", badForm("That request is no longer waiting.")
			}
			q := reqs[i]
			if approve {
				return q.Name + " can now use " + l.Name + ".", d.Approve(r.Context(), id)
			}
			return "Declined " + q.Name + "'s request.", d.Decline(r.Context(), id)
		})
		return next + "/share", msg, err
	}
}

// memberOf finds the member the form names.
func memberOf(r *http.Request, d *tandem.Device, c tandem.CollectionID) (tandem.Member, error) {
	ms, err := d.Members(c)
	if err != nil {
		return tandem.Member{}, err
	}
	ref := r.PostFormValue("user")
	for _, m := range ms {
		if userRef(m.User) == ref {
			return m, nil
		}
	}
	leaves, err := d.PendingLeaves(c)
	if err != nil {
		return tandem.Member{}, err
	}
	for _, m := range leaves {
		if userRef(m.User) == ref {
			return m, nil
		}
	}
	return tandem.Member{}, badForm("That person is not a member any more.")
}

func (s *server) setRole(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		m, err := memberOf(r, d, c)
		if err != nil {
			return "", err
		}
		role := tandem.RoleWriter
		if r.PostFormValue("role") == string(tandem.RoleReader) {
			role = tandem.RoleReader
		}
		return m.Name + " is now " + article(roleName(role)) + ".", d.SetRole(r.Context(), c, m.User, role)
	})
	return next + "/share", msg, err
}

func (s *server) removeMember(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		m, err := memberOf(r, d, c)
		if err != nil {
			return "", err
		}
		return "Removed " + m.Name + " from " + l.Name + "; the list has a new key.", d.RemoveMember(r.Context(), c, m.User)
	})
	return next + "/share", msg, err
}

func (s *server) closeInvites(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		n, err := d.CloseInvites(c)
		if n == 1 {
			return "Closed 1 invite.", err
		}
		return "Closed " + itoa(n) + " invites.", err
	})
	return next + "/share", msg, err
}

// article puts "a" or "an" before a role's name.
func article(w string) string {
	if strings.IndexByte("aeiou", w[0]) >= 0 {
		return "an " + w
	}
	return "a " + w
}
