package jmaphub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Capability URIs (RFC 8620 §2, RFC 8621 §1.3.1).
const (
	capCore = "urn:ietf:params:jmap:core"
	capMail = "urn:ietf:params:jmap:mail"
)

// session is what the binding keeps of the JMAP Session resource
// (RFC 8620 §2). The URLs are templates still to be expanded; they are
// resolved against base, the URL the session was finally fetched from
// (after redirects), as RFC 3986 §5.1.3 resolves a relative reference against
// the retrieval URI. Decision: docs/decisions/tandem-hub-jmap-session.md.
type session struct {
	base           *url.URL
	apiURL         string
	downloadURL    string
	uploadURL      string
	eventSourceURL string
	accountID      string

	maxObjectsInSet int
	maxObjectsInGet int
	maxCalls        int
	maxSizeRequest  int64
}

// sessionDoc is the wire form of the Session resource, as far as it is used.
type sessionDoc struct {
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Accounts     map[string]struct {
		AccountCapabilities map[string]json.RawMessage `json:"accountCapabilities"`
	} `json:"accounts"`
	PrimaryAccounts map[string]string `json:"primaryAccounts"`
	APIURL          string            `json:"apiUrl"`
	DownloadURL     string            `json:"downloadUrl"`
	UploadURL       string            `json:"uploadUrl"`
	EventSourceURL  string            `json:"eventSourceUrl"`
	State           string            `json:"state"`
}

type coreCapability struct {
	MaxSizeRequest    int64 `json:"maxSizeRequest"`
	MaxCallsInRequest int   `json:"maxCallsInRequest"`
	MaxObjectsInGet   int   `json:"maxObjectsInGet"`
	MaxObjectsInSet   int   `json:"maxObjectsInSet"`
}

// fetchSession GETs the session resource and checks that it offers the mail
// capability with a primary account. An HTTP 5xx or 429 is tried again
// after a pause, within ctx.
func (c *client) fetchSession(ctx context.Context) (*session, error) {
	var s *session
	err := c.retry.Do(ctx, isTransient, func() error {
		var err error
		s, err = c.fetchSessionOnce(ctx)
		return err
	})
	return s, err
}

func (c *client) fetchSessionOnce(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.requestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.SessionURL, nil)
	if err != nil {
		return nil, fmt.Errorf("jmaphub: session URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBody(resp, maxSessionBytes, "session")
	if err != nil {
		return nil, err
	}
	var doc sessionDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, badResponse("session", "session resource: %v", err)
	}
	return parseSession(resp.Request.URL, &doc)
}

func parseSession(base *url.URL, doc *sessionDoc) (*session, error) {
	rawCore, ok := doc.Capabilities[capCore]
	if !ok {
		return nil, badResponse("session", "session has no %s capability", capCore)
	}
	if _, ok := doc.Capabilities[capMail]; !ok {
		return nil, badResponse("session", "session has no %s capability", capMail)
	}
	var core coreCapability
	if err := json.Unmarshal(rawCore, &core); err != nil {
		return nil, badResponse("session", "core capability: %v", err)
	}
	acct := doc.PrimaryAccounts[capMail]
	if acct == "" {
		return nil, badResponse("session", "session has no primary mail account")
	}
	if _, ok := doc.Accounts[acct]; !ok {
		return nil, badResponse("session", "primary mail account %q is not in accounts", acct)
	}
	if doc.APIURL == "" || doc.DownloadURL == "" {
		return nil, badResponse("session", "session lacks apiUrl or downloadUrl")
	}
	s := &session{
		base:            base,
		apiURL:          doc.APIURL,
		downloadURL:     doc.DownloadURL,
		uploadURL:       doc.UploadURL,
		eventSourceURL:  doc.EventSourceURL,
		accountID:       acct,
		maxObjectsInSet: positiveOr(core.MaxObjectsInSet, 1, 4096),
		maxObjectsInGet: positiveOr(core.MaxObjectsInGet, 1, 4096),
		maxCalls:        positiveOr(core.MaxCallsInRequest, 1, 64),
		maxSizeRequest:  int64(positiveOr(int(min(core.MaxSizeRequest, 1<<30)), 1<<16, 1<<30)),
	}
	if _, err := s.resolve(s.apiURL, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// server names the server in cursors: the API URL, resolved.
func (s *session) server() string {
	u, err := s.resolve(s.apiURL, nil)
	if err != nil {
		return s.apiURL
	}
	return u.String()
}

// positiveOr clamps a server limit: a missing or non-positive value (a
// broken server) becomes lo, a huge one hi.
func positiveOr(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	return min(v, hi)
}

// resolve expands an RFC 6570 level-1 template with vars (values are
// percent-encoded, RFC 6570 §3.2.2) and resolves the result against the
// session URL (§10.2: relative URLs are resolved against the session URL).
func (s *session) resolve(template string, vars map[string]string) (*url.URL, error) {
	var b strings.Builder
	for rest := template; rest != ""; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, badResponse("session", "URL template %q: unclosed {", template)
		}
		b.WriteString(rest[:i])
		b.WriteString(templateEscape(vars[rest[i+1:i+j]]))
		rest = rest[i+j+1:]
	}
	ref, err := url.Parse(b.String())
	if err != nil {
		return nil, badResponse("session", "URL template %q: %v", template, err)
	}
	u := s.base.ResolveReference(ref)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, badResponse("session", "URL %q is not http(s)", u)
	}
	return u, nil
}

// templateEscape percent-encodes everything but RFC 3986 unreserved
// characters, as RFC 6570 simple string expansion does.
func templateEscape(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
