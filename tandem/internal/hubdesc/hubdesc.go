// Package hubdesc is the hub descriptor of §13.1 behind tandem.Hub: its
// JSON codec (read with the strict reader, tandem/internal/tjson) and the
// connection it describes (tandem/hub/imaphub or tandem/hub/jmaphub).
// Package tandem wraps it in the opaque Hub an app passes around and turns
// its errors into *tandem.Error.
package hubdesc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
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

// Desc is a hub descriptor (§13.1): how to reach the one mail account a
// user's devices meet in. Its JSON form is the one a hub QR code carries:
//
//	{ "kind": "jmap", "session": "https://api.fastmail.com/jmap/session", "token": "..." }
//	{ "kind": "imap", "host": "imap.example.com", "port": 993, "user": "...", "password": "..." }
//
// The zero Desc is no hub. A Desc holds a credential.
type Desc struct {
	Kind     string `json:"kind"`
	Session  string `json:"session,omitempty"`
	Token    string `json:"token,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Security string `json:"security,omitempty"` // imap: "tls" (implicit), "starttls" or "none"
}

// ErrNoHub is Open's error for the zero Desc.
var ErrNoHub = errors.New("hubdesc: no hub")

// InvalidError is Parse's error: Reason is one line for a person, Err the
// strict reader's error if it was the one that refused.
type InvalidError struct {
	Reason string
	Err    error
}

func (e *InvalidError) Error() string {
	if e.Err == nil {
		return "hubdesc: " + e.Reason
	}
	return fmt.Sprintf("hubdesc: %s: %v", e.Reason, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

func invalid(err error, format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...), Err: err}
}

// JMAP describes a JMAP account by its session URL and bearer token
// (Fastmail: an API token). A bare origin (https://host or https://host/)
// means the well-known session resource, https://host/.well-known/jmap
// (RFC 8620 §2.2).
func JMAP(sessionURL, token string) Desc {
	return Desc{Kind: "jmap", Session: wellKnown(sessionURL), Token: token}
}

// JMAPBasic describes a JMAP account reached with a user name and
// password (HTTP Basic; servers such as Cyrus and Stalwart).
func JMAPBasic(sessionURL, user, password string) Desc {
	return Desc{Kind: "jmap", Session: wellKnown(sessionURL), User: user, Password: password}
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

// IMAP describes an IMAP account. Port 993 means implicit TLS; any other
// port is plain (for a server on this machine only) unless Security says
// otherwise.
func IMAP(host string, port int, user, password string) Desc {
	sec := "none"
	if port == 993 {
		sec = "tls"
	}
	return Desc{Kind: "imap", Host: host, Port: port, User: user, Password: password, Security: sec}
}

// IsZero reports whether d describes no hub.
func (d Desc) IsZero() bool { return d.Kind == "" }

// String names the account without its credential, for a person.
func (d Desc) String() string {
	switch d.Kind {
	case "jmap":
		return "JMAP " + d.Session
	case "imap":
		return fmt.Sprintf("IMAP %s@%s:%d", d.User, d.Host, d.Port)
	}
	return "no hub"
}

// Same reports whether d and o are the same account (§11.2: "a different
// hub"): same kind and address and user, whatever the credential.
func (d Desc) Same(o Desc) bool {
	return d.Kind == o.Kind && d.Session == o.Session && d.Host == o.Host && d.Port == o.Port && d.User == o.User
}

// Marshal writes the descriptor of §13.1.
func (d Desc) Marshal() ([]byte, error) { return json.Marshal(d) }

// Parse reads a hub descriptor (§13.1) with the strict reader every
// Tandem JSON goes through (duplicate keys rejected). Its errors are
// *InvalidError.
func Parse(b []byte) (Desc, error) {
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
		return Desc{}, invalid(err, "this is not a hub description")
	}
	switch j.Kind {
	case "jmap":
		if j.Session == "" {
			return Desc{}, invalid(nil, "the hub description has no JMAP session URL")
		}
		if j.User != "" {
			return JMAPBasic(j.Session, j.User, j.Password), nil
		}
		return JMAP(j.Session, j.Token), nil
	case "imap":
		if j.Host == "" || j.Port <= 0 || j.Port > 65535 || j.User == "" {
			return Desc{}, invalid(nil, "the hub description needs an IMAP host, a port from 1 to 65535 and a user")
		}
		d := IMAP(j.Host, int(j.Port), j.User, j.Password)
		switch j.Security {
		case "", "tls", "starttls", "none":
			if j.Security != "" {
				d.Security = j.Security
			}
		default:
			return Desc{}, invalid(nil, "unknown IMAP security %q (use tls, starttls or none)", j.Security)
		}
		return d, nil
	}
	return Desc{}, invalid(nil, "unknown hub kind %q (use jmap or imap)", j.Kind)
}

// dialTimeout bounds connecting to a hub, so that an unreachable hub is
// reported as offline in seconds, not minutes.
const dialTimeout = 10 * time.Second

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

// Open connects to the hub d describes, drawing logins and appends from
// budget (shared by every connection of a device), trusting roots for its
// TLS certificate (nil: the system's). The zero Desc gives ErrNoHub.
func (d Desc) Open(ctx context.Context, budget *hub.RateBudget, roots *x509.CertPool) (hub.Store, error) {
	switch d.Kind {
	case "jmap":
		tr := &http.Transport{
			Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: dialTimeout}).DialContext,
			TLSHandshakeTimeout: dialTimeout, IdleConnTimeout: 90 * time.Second,
		}
		if roots != nil {
			tr.TLSClientConfig = &tls.Config{RootCAs: roots}
		}
		cfg := jmaphub.Config{SessionURL: d.Session, HTTPClient: &http.Client{Transport: tr}, Budget: budget}
		if d.User != "" {
			cfg.Username, cfg.Password = d.User, d.Password
		} else if d.Token != "" {
			cfg.HTTPClient.Transport = bearer{token: d.Token, next: tr}
		}
		s, err := jmaphub.Open(ctx, cfg)
		if err != nil {
			tr.CloseIdleConnections()
			return nil, err
		}
		return closingStore{Store: s, transport: tr}, nil
	case "imap":
		cfg := imaphub.Config{Addr: net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), User: d.User, Password: d.Password, Budget: budget}
		switch d.Security {
		case "tls":
			cfg.Security, cfg.TLS = imaphub.ImplicitTLS, &tls.Config{ServerName: d.Host, RootCAs: roots}
		case "starttls":
			cfg.Security, cfg.TLS = imaphub.StartTLS, &tls.Config{ServerName: d.Host, RootCAs: roots}
		}
		cfg.Dialer = (&net.Dialer{Timeout: dialTimeout}).DialContext
		return imaphub.Open(ctx, cfg)
	}
	return nil, ErrNoHub
}
