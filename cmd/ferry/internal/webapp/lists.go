package webapp

import (
	"errors"
	"net/http"
	"strings"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/tandem"
)

type homeBody struct {
	Name    string
	Lists   []listView
	Waiting []string // requests to join not answered yes yet
	NoHub   bool     // lists stay on this device until an account is connected
}

// home is the lists, or the first-run pages while the profile is not set up.
func (s *server) home(w http.ResponseWriter, r *http.Request) {
	if s.showSetup(w, r) {
		return
	}
	err := s.live.with(r.Context(), useWait, func(p *tandemcli.Profile) error {
		d := p.Device()
		if key := s.pendingBackup(); key != "" {
			s.render(w, r, "backup", s.frame(p, "Your backup key", key))
			return nil
		}
		lists, err := allLists(d)
		if err != nil {
			return err
		}
		b := homeBody{Name: p.Name(), Lists: lists, NoHub: d.Hub().IsZero()}
		for _, j := range p.Joins() {
			if j.State == "waiting" || j.State == "declined" {
				b.Waiting = append(b.Waiting, j.Message)
			}
		}
		s.render(w, r, "home", s.frame(p, "Lists", b))
		return nil
	})
	if errors.Is(err, errNoProfile) {
		s.render(w, r, "setup", pageData{Title: "Welcome", Status: indicatorView{"Not set up yet", "none"}})
		return
	}
	s.failed(w, r, err)
}

func (s *server) newList(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	name, err := text(r, "name", "list's name", maxListName, true)
	if err != nil {
		return "/", "", err
	}
	if strings.TrimSpace(name) == "" {
		return "/", "", badForm("Give the new list a name.")
	}
	d := p.Device()
	lists, err := allLists(d)
	if err != nil {
		return "/", "", err
	}
	for _, l := range lists {
		if !l.Ended && l.Role == tandem.RoleOwner && strings.EqualFold(l.Name, name) {
			return "/", "", badForm("You already have a list called %q: give the new one another name.", l.Name)
		}
	}
	c, err := d.NewCollection(name)
	if err != nil {
		return "/", "", err
	}
	return "/l/" + c.String(), "Made the list " + name + ".", nil
}

func (s *server) join(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	link := strings.TrimSpace(r.PostFormValue("link"))
	info, err := tandem.ParseInvite(link)
	if err != nil {
		return "/", "", badForm("That is not an invite link: paste the whole link you were sent.")
	}
	if _, err := p.Join(r.Context(), link); err != nil {
		return "/", "", err
	}
	s.live.poke() // a device without a hub took the invite's: Run starts
	name := info.Hint
	if name == "" {
		name = "the list"
	}
	return "/", "Asked " + info.By.Name + " to let you into " + name + ".", nil
}

type listBody struct {
	List  listView
	Items []itemView
}

func (s *server) listPage(r *http.Request, p *tandemcli.Profile) (string, any, error) {
	d := p.Device()
	c, l, err := listOfReq(r, d)
	if err != nil {
		return "", nil, err
	}
	its, err := itemsOf(d, c)
	if err != nil {
		return "", nil, err
	}
	return l.Name, listBody{List: l, Items: its}, nil
}

// onList runs fn on the list the path names, coming back to its page.
func onList(r *http.Request, p *tandemcli.Profile, fn func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error)) (string, string, error) {
	d := p.Device()
	c, l, err := listOfReq(r, d)
	if err != nil {
		return "/", "", err
	}
	msg, err := fn(d, c, l)
	return "/l/" + c.String(), msg, err
}

func (s *server) renameList(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	return onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		name, err := text(r, "name", "list's name", maxListName, true)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(name) == "" {
			return "", badForm("A list's name can't be empty.")
		}
		return "Renamed to " + name + ".", d.Rename(c, name)
	})
}

func (s *server) deleteList(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		if r.PostFormValue("confirm") != "yes" {
			return "", badForm("Tick the box to confirm deleting %s for everyone.", l.Name)
		}
		return "Deleted " + l.Name + " for everyone.", d.DeleteCollection(r.Context(), c)
	})
	if err == nil {
		next = "/"
	}
	return next, msg, err
}

func (s *server) copyList(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	var to tandem.CollectionID
	next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		name, err := text(r, "name", "new list's name", maxListName, true)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(name) == "" {
			name = l.Name + " (copy)"
		}
		to, err = d.CopyCollection(c, name)
		return "Copied to the new list " + name + ".", err
	})
	if err == nil {
		next = "/l/" + to.String()
	}
	return next, msg, err
}

func (s *server) leaveList(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	next, msg, err := onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		return "Left " + l.Name + ".", d.Leave(c)
	})
	if err == nil {
		next = "/"
	}
	return next, msg, err
}

func (s *server) addItem(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	return onList(r, p, func(d *tandem.Device, c tandem.CollectionID, l listView) (string, error) {
		title, err := text(r, "title", "title", maxValue, false)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(title) == "" {
			return "", badForm("An item needs a title.")
		}
		tags, err := tagsOf(r)
		if err != nil {
			return "", err
		}
		id, err := d.NewRecord(c, map[string][]byte{fieldTitle: []byte(title)})
		if err != nil {
			return "", err
		}
		for _, t := range tags {
			if err := d.AddElement(c, id, fieldTags, []byte(t)); err != nil {
				return "", err
			}
		}
		return "Added " + title + ".", nil
	})
}

// tagsOf reads the tags a form gives, separated by commas.
func tagsOf(r *http.Request) ([]string, error) {
	raw, err := text(r, "tags", "tags", maxValue, true)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range strings.Split(raw, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out, nil
}

type itemBody struct {
	List listView
	Item itemView
}

func (s *server) itemPage(r *http.Request, p *tandemcli.Profile) (string, any, error) {
	d := p.Device()
	c, l, err := listOfReq(r, d)
	if err != nil {
		return "", nil, err
	}
	_, it, err := itemOfReq(r, d, c)
	if err != nil {
		return "", nil, err
	}
	return it.Title, itemBody{List: l, Item: it}, nil
}

// onItem runs fn on the item the path names, coming back to back (the
// item's page, unless the form asks for its list's).
func onItem(r *http.Request, p *tandemcli.Profile, fn func(d *tandem.Device, c tandem.CollectionID, id tandem.RecordID, it itemView) (string, error)) (string, string, error) {
	d := p.Device()
	c, _, err := listOfReq(r, d)
	if err != nil {
		return "/", "", err
	}
	id, it, err := itemOfReq(r, d, c)
	next := "/l/" + c.String()
	if err != nil {
		return next, "", err
	}
	if r.PostFormValue("back") != "list" {
		next += "/i/" + id.String()
	}
	msg, err := fn(d, c, id, it)
	return next, msg, err
}

// setField writes one field's value: an edit, keeping one of concurrent
// values, or a merged value — each settles a conflict the page showed.
func (s *server) setField(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	return onItem(r, p, func(d *tandem.Device, c tandem.CollectionID, id tandem.RecordID, it itemView) (string, error) {
		field, err := text(r, "field", "field's name", maxFieldLen, true)
		if err != nil {
			return "", err
		}
		field = strings.TrimSpace(field)
		switch {
		case field == "":
			return "", badForm("Give the field a name.")
		case field == fieldTags:
			return "", badForm("Tags are added and removed one by one.")
		case strings.HasPrefix(field, "_"):
			return "", badForm("Field names can't start with _.")
		}
		value, err := text(r, "value", "value", maxValue, false)
		if err != nil {
			return "", err
		}
		if field == fieldTitle && strings.TrimSpace(value) == "" {
			return "", badForm("An item needs a title.")
		}
		return "Saved " + field + ".", d.SetString(c, id, field, value)
	})
}

func (s *server) setDone(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	return onItem(r, p, func(d *tandem.Device, c tandem.CollectionID, id tandem.RecordID, it itemView) (string, error) {
		v, msg := "yes", "Done: "+it.Title+"."
		if r.PostFormValue("done") != "yes" {
			v, msg = "no", "Not done: "+it.Title+"."
		}
		return msg, d.SetString(c, id, fieldDone, v)
	})
}

func (s *server) tag(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	return onItem(r, p, func(d *tandem.Device, c tandem.CollectionID, id tandem.RecordID, it itemView) (string, error) {
		tags, err := tagsOf(r)
		if err != nil || len(tags) == 0 {
			return "", errors.Join(err, badForm("Type a tag to add."))
		}
		for _, t := range tags {
			if err := d.AddElement(c, id, fieldTags, []byte(t)); err != nil {
				return "", err
			}
		}
		return "Tagged.", nil
	})
}

func (s *server) untag(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	return onItem(r, p, func(d *tandem.Device, c tandem.CollectionID, id tandem.RecordID, it itemView) (string, error) {
		t := r.PostFormValue("tag")
		return "Removed the tag " + t + ".", d.RemoveElement(c, id, fieldTags, []byte(t))
	})
}

func (s *server) deleteItem(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	next, msg, err := onItem(r, p, func(d *tandem.Device, c tandem.CollectionID, id tandem.RecordID, it itemView) (string, error) {
		return "Deleted " + it.Title + ".", d.Delete(c, id)
	})
	if i := strings.Index(next, "/i/"); i >= 0 {
		next = next[:i]
	}
	return next, msg, err
}
