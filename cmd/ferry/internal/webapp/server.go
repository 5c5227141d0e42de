// Package webapp is "ferry app": the profile's lists in a browser window,
// served on the loopback interface while the command runs. Pages are
// rendered on the server with html/template and work with plain forms;
// a small script (static/app.js) swaps in fresh pages when the device
// reports a change over Server-Sent Events (docs/decisions/app-web.md).
// It uses the public tandem package only, and tandemcli for the profile.
package webapp

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// cookiePrefix names the cookie that holds the per-launch secret once the
// opened URL handed it over; the port follows, since browsers share cookies
// across the ports of one host (two profiles' apps side by side).
const cookiePrefix = "ferry_app_"

// csp is the page's Content-Security-Policy: nothing from elsewhere, no
// inline script or style, no frames, forms only to this app.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// server is one launch of the app.
type server struct {
	live   *live
	log    *slog.Logger
	secret string          // in the URL the command opens, then in the cookie
	cookie string          // the cookie's name
	csrf   string          // in every form
	hosts  map[string]bool // Host headers this server answers (DNS rebinding)
	origin map[string]bool // Origin headers accepted on a POST
	pages  map[string]*template.Template
	mux    *http.ServeMux

	mu     sync.Mutex
	flash  string                 // the result of the last action, shown once
	backup string                 // a new identity's backup key, shown until written down
	shown  map[string]shownInvite // invites made here, by the id of their page and QR image
	pair   *pairing               // the joining side of adding this device, while it runs
	bg     sync.WaitGroup         // the pairings' goroutines
	offer  *offering              // the showing side of adding a device, while it runs
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newServer makes the app for the profile in dir, answering on addr
// (host:port as listened on).
func newServer(l *live, log *slog.Logger, addr string) (*server, error) {
	s := &server{live: l, log: log, secret: randomToken(), csrf: randomToken(),
		hosts: map[string]bool{}, origin: map[string]bool{}, shown: map[string]shownInvite{}}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	s.cookie = cookiePrefix + port
	names := []string{host}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		names = append(names, "localhost", "127.0.0.1", "[::1]")
	}
	for _, n := range names {
		if strings.Contains(n, ":") && !strings.HasPrefix(n, "[") {
			n = "[" + n + "]"
		}
		s.hosts[n+":"+port] = true
		s.origin["http://"+n+":"+port] = true
	}
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// url is the address the command opens: it carries the secret once.
func (s *server) url(addr string) string {
	return "http://" + addr + "/?key=" + url.QueryEscape(s.secret)
}

// ServeHTTP checks every request before any handler sees it: the Host
// header, the secret, and for anything that changes state the origin and
// the form's token.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make the browser send "Origin: null" on our own posts
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hosts[r.Host] {
		http.Error(w, "This address is not the app's: open the link ferry app printed.", http.StatusMisdirectedRequest)
		return
	}
	if k := r.URL.Query().Get("key"); k != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
		if !equal(k, s.secret) {
			http.Error(w, "This link is from an earlier ferry app: open the one it printed last.", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther) // the secret leaves the address bar and the history
		return
	}
	if c, err := r.Cookie(s.cookie); err != nil || !equal(c.Value, s.secret) {
		http.Error(w, "Open the link ferry app printed: this browser has not been let in.", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !s.sameOrigin(r) {
			s.log.Warn("refused a request from another site", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "fetch-site", r.Header.Get("Sec-Fetch-Site"))
			http.Error(w, "Refused: this request came from another site.", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if !equal(r.PostFormValue("csrf"), s.csrf) {
			http.Error(w, "Refused: the form is from an earlier ferry app; reload the page.", http.StatusForbidden)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// maxForm bounds a form's size (the largest field value is 60 KiB).
const maxForm = 256 << 10

// sameOrigin reports whether a state-changing request comes from this
// app's own pages: Sec-Fetch-Site when the browser sends it, and the
// Origin (or, lacking one, the Referer) header.
func (s *server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		return s.origin[o]
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		return err == nil && s.origin[u.Scheme+"://"+u.Host]
	}
	return false // a browser sends one of them on a form post
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// setFlash keeps the one line an action ends with, for the next page.
func (s *server) setFlash(msg string) {
	s.mu.Lock()
	s.flash = msg
	s.mu.Unlock()
}

func (s *server) takeFlash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flash
	s.flash = ""
	return f
}

func staticFiles() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	return http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
}
