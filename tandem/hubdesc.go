package tandem

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Hub is a hub descriptor (§13.1): how to reach the one mail account a
// user's devices meet in. Its JSON form is the one a hub QR code carries:
//
//	{ "kind": "jmap", "session": "https://api.fastmail.com/jmap/session", "token": "..." }
//	{ "kind": "imap", "host": "imap.example.com", "port": 993, "user": "...", "password": "..." }
//
// The zero Hub is no hub. A Hub holds a credential: keep it as secret as
// the account.
type Hub struct {
	kind     string
	session  string
	token    string
	host     string
	port     int
	user     string
	password string
	security string // imap: "tls" (implicit), "starttls" or "none"
}

// JMAPHub describes a JMAP account by its session URL and bearer token
// (Fastmail: an API token). A bare origin (https://host or https://host/)
// means the well-known session resource, https://host/.well-known/jmap
// (RFC 8620 §2.2).
func JMAPHub(sessionURL, token string) Hub {
	return Hub{kind: "jmap", session: wellKnown(sessionURL), token: token}
}

// wellKnown turns a bare origin into its JMAP session URL.
func wellKnown(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return s
	}
	u.Path = "/.well-known/jmap"
	return u.String()
}

// JMAPBasicHub describes a JMAP account reached with a user name and
// password (HTTP Basic; servers such as Cyrus and Stalwart).
func JMAPBasicHub(sessionURL, user, password string) Hub {
	return Hub{kind: "jmap", session: wellKnown(sessionURL), user: user, password: password}
}

// closingStore closes the HTTP transport it was given with the store, so
// that no idle connection (and its goroutines) outlives the device.
type closingStore struct {
	hub.Store
	transport *http.Transport
}

func (s closingStore) Close() error {
	err := s.Store.Close()
	s.transport.CloseIdleConnections()
	return err
}

// bearer adds an RFC 6750 bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// IMAPHub describes an IMAP account. Port 993 means implicit TLS; any
// other port is plain (for a server on this machine only) unless
// WithSecurity says otherwise.
func IMAPHub(host string, port int, user, password string) Hub {
	sec := "none"
	if port == 993 {
		sec = "tls"
	}
	return Hub{kind: "imap", host: host, port: port, user: user, password: password, security: sec}
}

// WithSecurity returns h with its IMAP transport security: "tls",
// "starttls" or "none".
func (h Hub) WithSecurity(s string) Hub { h.security = s; return h }

// IsZero reports whether h describes no hub.
func (h Hub) IsZero() bool { return h.kind == "" }

// Kind is "jmap", "imap" or "" for no hub.
func (h Hub) Kind() string { return h.kind }

// String names the account without its credential, for a person.
func (h Hub) String() string {
	switch h.kind {
	case "jmap":
		return "JMAP " + h.session
	case "imap":
		return fmt.Sprintf("IMAP %s@%s:%d", h.user, h.host, h.port)
	}
	return "no hub"
}

// Same reports whether h and o are the same account (§11.2: "a different
// hub"): same kind and address and user, whatever the credential.
func (h Hub) Same(o Hub) bool {
	return h.kind == o.kind && h.session == o.session && h.host == o.host && h.port == o.port && h.user == o.user
}

type hubJSON struct {
	Kind     string `json:"kind"`
	Session  string `json:"session,omitempty"`
	Token    string `json:"token,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Security string `json:"security,omitempty"`
}

// MarshalJSON writes the descriptor of §13.1.
func (h Hub) MarshalJSON() ([]byte, error) {
	return json.Marshal(hubJSON{h.kind, h.session, h.token, h.host, h.port, h.user, h.password, h.security})
}

// ParseHub reads a hub descriptor (§13.1) with the strict reader every
// Tandem JSON goes through (duplicate keys rejected).
func ParseHub(b []byte) (Hub, error) {
	var j struct {
		Kind     string `json:"kind" tjson:"required"`
		Session  string `json:"session"`
		Token    string `json:"token"`
		Host     string `json:"host"`
		Port     int64  `json:"port"`
		User     string `json:"user"`
		Password string `json:"password"`
		Security string `json:"security"`
	}
	if err := tjson.Unmarshal(b, &j); err != nil {
		return Hub{}, newErr(CodeInvalid, err, "this is not a hub description")
	}
	switch j.Kind {
	case "jmap":
		if j.Session == "" {
			return Hub{}, newErr(CodeInvalid, nil, "the hub description has no JMAP session URL")
		}
		if j.User != "" {
			return JMAPBasicHub(j.Session, j.User, j.Password), nil
		}
		return JMAPHub(j.Session, j.Token), nil
	case "imap":
		if j.Host == "" || j.Port <= 0 || j.Port > 65535 || j.User == "" {
			return Hub{}, newErr(CodeInvalid, nil, "the hub description needs an IMAP host, a port from 1 to 65535 and a user")
		}
		h := IMAPHub(j.Host, int(j.Port), j.User, j.Password)
		switch j.Security {
		case "", "tls", "starttls", "none":
			if j.Security != "" {
				h.security = j.Security
			}
		default:
			return Hub{}, newErr(CodeInvalid, nil, "unknown IMAP security %q (use tls, starttls or none)", j.Security)
		}
		return h, nil
	}
	return Hub{}, newErr(CodeInvalid, nil, "unknown hub kind %q (use jmap or imap)", j.Kind)
}

// dialTimeout bounds connecting to a hub, so that an unreachable hub is
// reported as offline in seconds, not minutes.
const dialTimeout = 10 * time.Second

// open connects to the hub h describes, drawing logins and appends from
// budget (shared by every connection of the device), trusting roots for
// its TLS certificate (nil: the system's; Options.RootCAs).
func (h Hub) open(ctx context.Context, budget *hub.RateBudget, roots *x509.CertPool) (hub.Store, error) {
	switch h.kind {
	case "jmap":
		tr := &http.Transport{
			Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: dialTimeout}).DialContext,
			TLSHandshakeTimeout: dialTimeout, IdleConnTimeout: 90 * time.Second,
		}
		if roots != nil {
			tr.TLSClientConfig = &tls.Config{RootCAs: roots}
		}
		cfg := jmaphub.Config{SessionURL: h.session, HTTPClient: &http.Client{Transport: tr}, Budget: budget}
		if h.user != "" {
			cfg.Username, cfg.Password = h.user, h.password
		} else if h.token != "" {
			cfg.HTTPClient.Transport = bearer{token: h.token, next: tr}
		}
		s, err := jmaphub.Open(ctx, cfg)
		if err != nil {
			tr.CloseIdleConnections()
			return nil, err
		}
		return closingStore{Store: s, transport: tr}, nil
	case "imap":
		cfg := imaphub.Config{Addr: net.JoinHostPort(h.host, strconv.Itoa(h.port)), User: h.user, Password: h.password, Budget: budget}
		switch h.security {
		case "tls":
			cfg.Security, cfg.TLS = imaphub.ImplicitTLS, &tls.Config{ServerName: h.host, RootCAs: roots}
		case "starttls":
			cfg.Security, cfg.TLS = imaphub.StartTLS, &tls.Config{ServerName: h.host, RootCAs: roots}
		}
		cfg.Dialer = (&net.Dialer{Timeout: dialTimeout}).DialContext
		return imaphub.Open(ctx, cfg)
	}
	return nil, newErr(CodeNoHub, nil, "no sync hub is connected yet")
}
