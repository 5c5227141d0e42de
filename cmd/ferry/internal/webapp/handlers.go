package webapp

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/tandem"
)

// useWait is how long a request waits for the device while another
// ferry command has the profile.
const useWait = 20 * time.Second

// pageData is what every page's layout shows.
type pageData struct {
	Title   string
	CSRF    string
	Status  indicatorView
	Flash   string
	Notices []noticeView
	Body    any
}

// noticeView is a §13.2 message with where to act on it.
type noticeView struct {
	Text string
	Link string
}

func parsePages() (map[string]*template.Template, error) {
	names, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{"role": roleName}
	out := map[string]*template.Template{}
	for _, n := range names {
		if n.Name() == "layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n.Name())
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(n.Name(), ".html")] = t
	}
	return out, nil
}

// roleName is a role as the pages call it: a writer is an editor.
func roleName(r tandem.Role) string {
	if r == tandem.RoleWriter {
		return "editor"
	}
	return string(r)
}

func (s *server) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", staticFiles())
	m.HandleFunc("GET /events", s.events)
	m.HandleFunc("GET /{$}", s.home)
	m.HandleFunc("GET /qr/{id}", s.qrImage)
	m.HandleFunc("POST /lists", s.act(s.newList))
	m.HandleFunc("POST /join", s.act(s.join))
	m.HandleFunc("GET /l/{list}", s.page("list", s.listPage))
	m.HandleFunc("POST /l/{list}/rename", s.act(s.renameList))
	m.HandleFunc("POST /l/{list}/delete", s.act(s.deleteList))
	m.HandleFunc("POST /l/{list}/copy", s.act(s.copyList))
	m.HandleFunc("POST /l/{list}/leave", s.act(s.leaveList))
	m.HandleFunc("POST /l/{list}/items", s.act(s.addItem))
	m.HandleFunc("GET /l/{list}/i/{item}", s.page("item", s.itemPage))
	m.HandleFunc("POST /l/{list}/i/{item}/set", s.act(s.setField))
	m.HandleFunc("POST /l/{list}/i/{item}/done", s.act(s.setDone))
	m.HandleFunc("POST /l/{list}/i/{item}/tag", s.act(s.tag))
	m.HandleFunc("POST /l/{list}/i/{item}/untag", s.act(s.untag))
	m.HandleFunc("POST /l/{list}/i/{item}/delete", s.act(s.deleteItem))
	s.shareRoutes(m)
	s.setupRoutes(m)
	s.mux = m
}

// refreshHeader marks the fetches of the live script: they leave the
// line an action ended with for the page the person navigates to.
const refreshHeader = "X-Ferry-Refresh"

// render writes a page: the layout with the named page's content.
func (s *server) render(w http.ResponseWriter, r *http.Request, name string, d pageData) {
	d.CSRF = s.csrf
	if d.Flash == "" && r.Header.Get(refreshHeader) == "" {
		d.Flash = s.takeFlash()
	}
	var b strings.Builder
	if err := s.pages[name].Execute(&b, d); err != nil {
		s.log.Error("rendering", "page", name, "err", err)
		http.Error(w, "The page could not be shown; ferry app's log says why.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, b.String())
}

// pageFn reads what a page shows from the device.
type pageFn func(r *http.Request, p *tandemcli.Profile) (title string, body any, err error)

// page serves a page that shows the device's data.
func (s *server) page(name string, fn pageFn) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := s.live.with(r.Context(), useWait, func(p *tandemcli.Profile) error {
			title, body, err := fn(r, p)
			if err != nil {
				return err
			}
			s.render(w, r, name, s.frame(p, title, body))
			return nil
		})
		s.failed(w, r, err)
	}
}

// failed answers a request whose device could not be used.
func (s *server) failed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case err == nil:
	case errors.Is(err, errNoProfile):
		http.Redirect(w, r, "/", http.StatusSeeOther)
	case errors.Is(err, errBusy):
		w.WriteHeader(http.StatusServiceUnavailable)
		s.render(w, r, "message", pageData{Title: "Busy", Status: indicatorView{"Paused", "behind"},
			Body: "Another ferry command is using this profile. This page comes back when it is done: reload it in a moment."})
	case tandem.CodeOf(err) == tandem.CodeNotFound || errors.Is(err, errNotFound):
		w.WriteHeader(http.StatusNotFound)
		s.render(w, r, "message", pageData{Title: "Not found", Body: "There is no such list or item here (any more)."})
	default:
		w.WriteHeader(http.StatusInternalServerError)
		s.render(w, r, "message", pageData{Title: "Error", Body: tandemcli.Message(err)})
	}
}

var errNotFound = errors.New("not found")

// frame fills the layout's parts from the device.
func (s *server) frame(p *tandemcli.Profile, title string, body any) pageData {
	d := p.Device()
	return pageData{Title: title, Status: indicator(d.Status(), s.live.stopped(), !d.Hub().IsZero()), Notices: notices(d), Body: body}
}

// notices are the messages the device's state calls for now (§13.2).
func notices(d *tandem.Device) []noticeView {
	var out []noticeView
	lists, err := allLists(d)
	if err != nil {
		return nil
	}
	for _, l := range lists {
		c, _ := tandem.ParseCollectionID(l.ID)
		// A list deleted since allLists has nothing to say: its queries'
		// errors leave its notices out.
		reqs, _ := d.Requests(c)
		for _, r := range reqs {
			msg := fmt.Sprintf("%s wants to join %s.", r.Name, l.Name)
			if r.PreviouslyRemoved {
				msg = fmt.Sprintf("%s was removed from %s. Add them again?", r.Name, l.Name)
			}
			out = append(out, noticeView{msg, "/l/" + l.ID + "/share"})
		}
		leaves, _ := d.PendingLeaves(c)
		for _, m := range leaves {
			out = append(out, noticeView{fmt.Sprintf("%s left %s.", m.Name, l.Name), "/l/" + l.ID + "/share"})
		}
		if what, ok, _ := d.ChangeInFlight(c); ok {
			out = append(out, noticeView{fmt.Sprintf("Another of your devices started %s and didn't finish it.", what), "/l/" + l.ID + "/share"})
		}
		if l.Notice != "" && (l.Ended || l.State == tandem.StateStalled) {
			out = append(out, noticeView{l.Notice, "/l/" + l.ID})
		}
	}
	return out
}

// actFn does what a form asks; it returns where to go next and the line
// to show there.
type actFn func(r *http.Request, p *tandemcli.Profile) (next, msg string, err error)

// act serves a form post: do it, then show the next page (post, redirect,
// get), with the result or the error as one line.
func (s *server) act(fn actFn) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next := "/"
		err := s.live.with(r.Context(), useWait, func(p *tandemcli.Profile) error {
			n, msg, err := fn(r, p)
			if n != "" {
				next = n
			}
			if err != nil {
				return err
			}
			s.setFlash(msg)
			return nil
		})
		if err != nil && !errors.Is(err, errNoProfile) {
			s.setFlash(humanError(err))
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// humanError is the one line a person sees for err.
func humanError(err error) string {
	switch {
	case errors.Is(err, errBusy):
		return "Another ferry command is using this profile: try again in a moment."
	case errors.Is(err, errNotFound):
		return "There is no such list or item here (any more)."
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "Stopped before it was done: try again."
	}
	var fe *formError
	if errors.As(err, &fe) {
		return fe.msg
	}
	return tandemcli.Message(err)
}

// formError is bad input in a form.
type formError struct{ msg string }

func (e *formError) Error() string { return e.msg }

func badForm(format string, a ...any) error { return &formError{fmt.Sprintf(format, a...)} }

// text reads a form field as one checked piece of text.
func text(r *http.Request, name, what string, max int, oneLine bool) (string, error) {
	v := r.PostFormValue(name)
	switch {
	case !utf8.ValidString(v):
		return "", badForm("The %s is not valid text.", what)
	case len(v) > max:
		return "", badForm("The %s is %d bytes long: keep it under %d.", what, len(v), max)
	case oneLine && strings.ContainsAny(v, "\r\n\x00"):
		return "", badForm("The %s must be one line.", what)
	}
	return v, nil
}

// Bounds of what the forms take, as the CLI has them.
const (
	maxListName = 200
	maxValue    = 60 << 10
	maxFieldLen = 64
)

// listOfReq finds the list the path names among the device's.
func listOfReq(r *http.Request, d *tandem.Device) (tandem.CollectionID, listView, error) {
	c, err := tandem.ParseCollectionID(r.PathValue("list"))
	if err != nil {
		return c, listView{}, errNotFound
	}
	for _, x := range d.Collections() {
		if x == c {
			l, err := listOf(d, c)
			return c, l, err
		}
	}
	return c, listView{}, errNotFound
}

func itemOfReq(r *http.Request, d *tandem.Device, c tandem.CollectionID) (tandem.RecordID, itemView, error) {
	id, err := tandem.ParseRecordID(r.PathValue("item"))
	if err != nil {
		return id, itemView{}, errNotFound
	}
	rec, err := d.Record(c, id)
	if err != nil {
		return id, itemView{}, err
	}
	if rec.Deleted {
		return id, itemView{}, errNotFound
	}
	return id, itemOf(rec), nil
}

// events streams a "change" event at every change of the device's data
// or status (Server-Sent Events); the page's script fetches itself again.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()
	ping := time.NewTicker(20 * time.Second)
	defer ping.Stop()
	for {
		ch, v := s.live.next()
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		case <-ch:
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", v+1)
		}
		fl.Flush()
	}
}
