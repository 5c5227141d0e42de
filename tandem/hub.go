package tandem

import (
	"context"
	"crypto/x509"
	"errors"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/hubdesc"
)

// Hub is a hub descriptor (§13.1): how to reach the one mail account a
// user's devices meet in. Its JSON form is the one a hub QR code carries:
//
//	{ "kind": "jmap", "session": "https://api.fastmail.com/jmap/session", "token": "..." }
//	{ "kind": "imap", "host": "imap.example.com", "port": 993, "user": "...", "password": "..." }
//
// The zero Hub is no hub. A Hub holds a credential: keep it as secret as
// the account. The codec and the connection are in tandem/internal/hubdesc.
type Hub struct {
	d hubdesc.Desc
}

// JMAPHub describes a JMAP account by its session URL and bearer token
// (Fastmail: an API token). A bare origin (https://host or https://host/)
// means the well-known session resource, https://host/.well-known/jmap
// (RFC 8620 §2.2).
func JMAPHub(sessionURL, token string) Hub { return Hub{hubdesc.JMAP(sessionURL, token)} }

// JMAPBasicHub describes a JMAP account reached with a user name and
// password (HTTP Basic; servers such as Cyrus and Stalwart).
func JMAPBasicHub(sessionURL, user, password string) Hub {
	return Hub{hubdesc.JMAPBasic(sessionURL, user, password)}
}

// IMAPHub describes an IMAP account. Port 993 means implicit TLS; any
// other port is plain (for a server on this machine only) unless
// WithSecurity says otherwise.
func IMAPHub(host string, port int, user, password string) Hub {
	return Hub{hubdesc.IMAP(host, port, user, password)}
}

// WithSecurity returns h with its IMAP transport security: "tls",
// "starttls" or "none".
func (h Hub) WithSecurity(s string) Hub { h.d.Security = s; return h }

// IsZero reports whether h describes no hub.
func (h Hub) IsZero() bool { return h.d.IsZero() }

// Kind is "jmap", "imap" or "" for no hub.
func (h Hub) Kind() string { return h.d.Kind }

// String names the account without its credential, for a person.
func (h Hub) String() string { return h.d.String() }

// Same reports whether h and o are the same account (§11.2: "a different
// hub"): same kind and address and user, whatever the credential.
func (h Hub) Same(o Hub) bool { return h.d.Same(o.d) }

// MarshalJSON writes the descriptor of §13.1.
func (h Hub) MarshalJSON() ([]byte, error) { return h.d.Marshal() }

// ParseHub reads a hub descriptor (§13.1) with the strict reader every
// Tandem JSON goes through (duplicate keys rejected).
func ParseHub(b []byte) (Hub, error) {
	d, err := hubdesc.Parse(b)
	if err != nil {
		return Hub{}, hubDescErr(err)
	}
	return Hub{d}, nil
}

// hubDescErr turns a descriptor's refusal into an *Error.
func hubDescErr(err error) error {
	var e *hubdesc.InvalidError
	if errors.As(err, &e) {
		return newErr(CodeInvalid, e.Err, "%s", e.Reason)
	}
	return newErr(CodeInvalid, err, "this is not a hub description")
}

// open connects to the hub h describes, drawing logins and appends from
// budget (shared by every connection of the device), trusting roots for
// its TLS certificate (nil: the system's; Options.RootCAs).
func (h Hub) open(ctx context.Context, budget *hub.RateBudget, roots *x509.CertPool) (hub.Store, error) {
	s, err := h.d.Open(ctx, budget, roots)
	if errors.Is(err, hubdesc.ErrNoHub) {
		return nil, newErr(CodeNoHub, err, "no sync hub is connected yet")
	}
	return s, err
}
