package webapp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/tandem"
)

func (s *server) setupRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /setup/new", s.setupNew)
	m.HandleFunc("POST /setup/restore", s.setupNew)
	m.HandleFunc("POST /setup/pair", s.setupPair)
	m.HandleFunc("POST /setup/backup-done", s.backupDone)
	m.HandleFunc("GET /account", s.page("connect", s.accountPage))
	m.HandleFunc("POST /connect/imap", s.act(s.connectIMAP))
	m.HandleFunc("POST /connect/jmap", s.act(s.connectJMAP))
	m.HandleFunc("GET /device", s.page("device", s.devicePage))
	m.HandleFunc("POST /device/add", s.act(s.deviceAdd))
	m.HandleFunc("POST /device/answer", s.act(s.deviceAnswer))
}

func itoa(n int) string { return strconv.Itoa(n) }

// pendingBackup is a new identity's backup key until the person says they
// wrote it down (then it is never shown here again).
func (s *server) pendingBackup() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backup
}

// backupDone forgets the backup key once the person wrote it down.
func (s *server) backupDone(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.backup = ""
	s.mu.Unlock()
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

// pairing is the joining side of adding this device to an identity: the
// code to show, then the device, or why it ended.
type pairing struct {
	stop func() // ends the wait
	mu   sync.Mutex
	code string
	err  string
}

type pairBody struct{ Code, Err string }

// showSetup shows the joining side's page while it runs.
func (s *server) showSetup(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	pr := s.pair
	s.mu.Unlock()
	if pr == nil || tandemcli.HasProfile(s.live.dir) {
		return false
	}
	pr.mu.Lock()
	b := pairBody{Code: sixDigits(pr.code), Err: pr.err}
	pr.mu.Unlock()
	s.render(w, r, "pair", pageData{Title: "Add this device", Status: indicatorView{"Not set up yet", "none"}, Body: b})
	return true
}

func sixDigits(c string) string {
	if len(c) == 6 {
		return c[:3] + " " + c[3:]
	}
	return c
}

// setupName checks that the profile is not set up yet and reads the
// name a first-run form gives (why: what to say when it is missing).
func (s *server) setupName(r *http.Request, why string) (string, error) {
	if tandemcli.HasProfile(s.live.dir) {
		return "", badForm("This profile is set up already.")
	}
	name, err := tandemcli.CheckName(strings.TrimSpace(r.PostFormValue("name")))
	if err != nil || r.PostFormValue("name") == "" {
		return "", badForm("%s", why)
	}
	return name, nil
}

// setupNew makes the profile: a new identity, or (with a backup key) a
// restored one.
func (s *server) setupNew(w http.ResponseWriter, r *http.Request) {
	next := "/"
	err := func() error {
		name, err := s.setupName(r, "Give the name others will see for you: one line of text.")
		if err != nil {
			return err
		}
		key := ""
		if r.URL.Path == "/setup/restore" {
			if key = strings.Join(strings.Fields(r.PostFormValue("key")), ""); key == "" {
				return badForm("Type your backup key.")
			}
		}
		p, backup, err := tandemcli.CreateProfile(r.Context(), s.live.dir, name, key)
		if err != nil {
			return err
		}
		if key == "" {
			s.mu.Lock()
			s.backup = backup
			s.mu.Unlock()
		} else {
			s.setFlash("Restored " + name + "'s identity as a new device. Connect the same mail account to find your lists.")
			next = "/account"
		}
		s.live.adopt(p)
		return nil
	}()
	if err != nil {
		s.setFlash(humanError(err))
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// pairWait bounds the joining side's wait: the code lives two minutes.
const pairWait = 5 * time.Minute

// setupPair starts adding this device to the identity whose pairing code
// (the text another device's "Add a device" shows) was pasted.
func (s *server) setupPair(w http.ResponseWriter, r *http.Request) {
	err := func() error {
		name, err := s.setupName(r, "Give a name for this device's question on the other one.")
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), pairWait)
		j, finish, err := tandemcli.PairProfile(ctx, s.live.dir, name, strings.TrimSpace(r.PostFormValue("code")))
		if err != nil {
			cancel()
			return err
		}
		pr := &pairing{stop: cancel}
		s.mu.Lock()
		s.pair = pr
		s.mu.Unlock()
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.runPairing(ctx, cancel, pr, j, finish) }()
		return nil
	}()
	if err != nil {
		s.setFlash(humanError(err))
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// runPairing shows the code, waits for the other device's approval and
// makes the profile; it ends with the pairing's wait.
func (s *server) runPairing(ctx context.Context, cancel func(), pr *pairing, j *tandem.PairingJoin, finish func(*tandem.Device) (*tandemcli.Profile, error)) {
	defer cancel()
	defer func() {
		cctx, c := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer c()
		j.Close(cctx)
	}()
	fail := func(err error) {
		pr.mu.Lock()
		pr.err = tandemcli.Message(err)
		if tandem.CodeOf(err) == tandem.CodeExpired {
			pr.err = "This device was not added: the other device did not approve it before the code expired. Show a new code there and try again."
		}
		pr.mu.Unlock()
		s.live.changed()
	}
	code, err := j.Code(ctx)
	if err != nil {
		fail(err)
		return
	}
	pr.mu.Lock()
	pr.code = code
	pr.mu.Unlock()
	s.live.changed()
	d, err := j.Device(ctx)
	if err != nil {
		fail(err)
		return
	}
	p, err := finish(d)
	if err != nil {
		fail(err)
		return
	}
	s.mu.Lock()
	s.pair = nil
	s.mu.Unlock()
	s.setFlash("This device is added.")
	s.live.adopt(p)
}

// connectBody is the connect page: for a device with an account, which one.
type connectBody struct{ Hub string }

// accountPage shows the account the device syncs through and the forms
// to connect it again (a changed password) or to another one.
func (s *server) accountPage(r *http.Request, p *tandemcli.Profile) (string, any, error) {
	b := connectBody{}
	if h := p.Device().Hub(); !h.IsZero() {
		b.Hub = h.String()
	}
	return "Mail account", b, nil
}

// connectIMAP connects the device to an IMAP account and syncs once, so
// that a refused password shows at once.
func (s *server) connectIMAP(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	host := strings.TrimSpace(r.PostFormValue("host"))
	port, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("port")))
	if host == "" || err != nil || port <= 0 || port > 65535 {
		return "/", "", badForm("Give the mail server's name and port (993 for most providers).")
	}
	sec := r.PostFormValue("security")
	h := tandem.IMAPHub(host, port, strings.TrimSpace(r.PostFormValue("user")), r.PostFormValue("password"))
	if sec == "starttls" || sec == "none" || sec == "tls" {
		h = h.WithSecurity(sec)
	}
	return s.connect(r, p, h)
}

func (s *server) connectJMAP(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	u := strings.TrimSpace(r.PostFormValue("url"))
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return "/", "", badForm("Give the JMAP session address, starting with https://.")
	}
	h := tandem.JMAPHub(u, r.PostFormValue("token"))
	if user := strings.TrimSpace(r.PostFormValue("user")); user != "" {
		h = tandem.JMAPBasicHub(u, user, r.PostFormValue("password"))
	}
	return s.connect(r, p, h)
}

// connectWait bounds the first sync after connecting.
const connectWait = 60 * time.Second

func (s *server) connect(r *http.Request, p *tandemcli.Profile, h tandem.Hub) (string, string, error) {
	d := p.Device()
	if !d.Hub().IsZero() && !d.Hub().Same(h) && r.PostFormValue("switch") != "yes" {
		return "/account", "", badForm("This device syncs through %s: tick “switch” to use another account (lists only there stop syncing here).", d.Hub())
	}
	if err := d.SetHub(r.Context(), h); err != nil {
		return "/account", "", err
	}
	ctx, cancel := context.WithTimeout(r.Context(), connectWait)
	defer cancel()
	_, err := d.Sync(ctx)
	p.SaveSync(err)
	s.live.poke()
	if err != nil {
		return "/account", "", err
	}
	return "/", "Connected to " + h.String() + ". Everyone you invite gets access to this account's mailbox; a dedicated account is best.", nil
}

// offering is the showing side of adding a device: the QR code, and the
// devices that asked, each with its code.
type offering struct {
	id    string
	offer *tandem.PairingOffer
	stop  func()
	mu    sync.Mutex
	reqs  []*tandem.PairingRequest
	done  string // how it ended
}

type deviceReq struct {
	Index      int
	Name, Code string
}

type deviceBody struct {
	Active  bool
	QR      string
	Text    string
	Expires time.Time
	Reqs    []deviceReq
	Done    string
}

func (s *server) pairingText(id string) (string, bool) {
	s.mu.Lock()
	o := s.offer
	s.mu.Unlock()
	if o == nil || o.id != id {
		return "", false
	}
	return o.offer.Payload(), true
}

func (s *server) devicePage(r *http.Request, p *tandemcli.Profile) (string, any, error) {
	s.mu.Lock()
	o := s.offer
	s.mu.Unlock()
	var b deviceBody
	if o != nil {
		o.mu.Lock()
		b = deviceBody{Active: o.done == "", QR: o.id, Text: o.offer.Payload(), Expires: o.offer.Expires(), Done: o.done}
		for i, q := range o.reqs {
			if q != nil {
				b.Reqs = append(b.Reqs, deviceReq{Index: i, Name: q.Name(), Code: sixDigits(q.Code())})
			}
		}
		o.mu.Unlock()
	}
	return "Add a device", b, nil
}

// deviceAdd shows a pairing QR code and answers the devices that ask.
func (s *server) deviceAdd(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	offer, err := p.Device().AddDevice(r.Context())
	if err != nil {
		return "/device", "", err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), pairWait)
	o := &offering{id: randomToken(), offer: offer, stop: cancel}
	s.mu.Lock()
	old := s.offer
	s.offer = o
	s.mu.Unlock()
	if old != nil {
		old.stop()
	}
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.runOffer(ctx, o) }()
	return "/device", "", nil
}

func (s *server) runOffer(ctx context.Context, o *offering) {
	defer func() {
		cctx, c := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer c()
		o.offer.Close(cctx)
		o.stop()
	}()
	for {
		q, err := o.offer.Next(ctx)
		o.mu.Lock()
		if err != nil {
			if o.done == "" {
				o.done = tandemcli.Message(err)
			}
			o.mu.Unlock()
			s.live.changed()
			return
		}
		o.reqs = append(o.reqs, q)
		o.mu.Unlock()
		s.live.changed()
	}
}

// deviceAnswer approves or declines a device that asked.
func (s *server) deviceAnswer(r *http.Request, p *tandemcli.Profile) (string, string, error) {
	s.mu.Lock()
	o := s.offer
	s.mu.Unlock()
	i, err := strconv.Atoi(r.PostFormValue("request"))
	if o == nil || err != nil {
		return "/device", "", badForm("That device is no longer asking.")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if i < 0 || i >= len(o.reqs) || o.reqs[i] == nil {
		return "/device", "", badForm("That device is no longer asking.")
	}
	q := o.reqs[i]
	if r.PostFormValue("approve") != "yes" {
		o.reqs[i] = nil
		if q.Decline(r.Context()) != nil {
			return "/device", "Declined " + q.Name() + " (that device could not be told: it waits until its code expires).", nil
		}
		return "/device", "Declined " + q.Name() + ".", nil
	}
	if err := q.Approve(r.Context()); err != nil {
		return "/device", "", err
	}
	o.done = "Added " + q.Name() + " as one of your devices."
	o.reqs = nil
	return "/device", o.done, nil
}
