package tandemcli

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// The probes check a mail account before it is saved, so that a wrong
// address, port or credential is one line with the fix, in seconds
// (docs/decisions/cli-connect.md).

// maxSessionBody bounds a JMAP session document; maxLoginLines, the
// untagged lines an IMAP server may send before answering LOGIN.
const (
	maxSessionBody = 1 << 20
	maxLoginLines  = 1000
)

// loginTimeout bounds the answer to LOGIN, apart from --timeout (which is
// for reaching the server): after wrong passwords a server waits before it
// answers (Dovecot doubles its auth failure delay per failure, up to 15 s),
// and a refused login must read "refused", not "stopped answering".
const loginTimeout = 45 * time.Second

// jmapTarget is the URL a person typed for a JMAP account, made into the
// one to ask: a bare origin gets /.well-known/jmap (RFC 8620 §2.2).
func jmapTarget(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, usagef("%q is not a URL: give the JMAP session URL, e.g. https://api.fastmail.com/jmap/session", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, usagef("%q: a JMAP URL starts with https:// (or http:// for a server on this machine)", raw)
	}
	if u.User != nil {
		return nil, usagef("put the user name in --user, not in the URL")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/.well-known/jmap"
	}
	return u, nil
}

// probeJMAP fetches the session document with the credential and returns
// the session URL to keep (after redirects).
func probeJMAP(ctx context.Context, u *url.URL, auth func(*http.Request), timeout time.Duration, roots *x509.CertPool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", usagef("%s is not a URL Ferry can ask", u)
	}
	req.Header.Set("Accept", "application/json")
	auth(req)
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: timeout}).DialContext, TLSHandshakeTimeout: timeout, TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		auth(r) // a redirect to the session URL on the same server keeps the credential
		if r.URL.Host != via[0].URL.Host {
			r.Header.Del("Authorization")
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		return "", netErr(ctx, err, u.Host, timeout, "JMAP")
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", failf("auth", "%s refused this user name and password (or token): check them and connect again", final.Host)
	case resp.StatusCode != http.StatusOK:
		return "", failf("not_jmap", "no JMAP session at %s (HTTP %d): give the JMAP session URL, e.g. https://api.fastmail.com/jmap/session", u, resp.StatusCode)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var doc struct {
		APIURL       string                     `json:"apiUrl"`
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSessionBody))
	if err != nil {
		return "", netErr(ctx, err, u.Host, timeout, "JMAP")
	}
	if ct != "application/json" || json.Unmarshal(body, &doc) != nil || doc.APIURL == "" || doc.Capabilities["urn:ietf:params:jmap:core"] == nil {
		return "", failf("not_jmap", "%s answers, but not with a JMAP session: give the JMAP session URL, e.g. https://api.fastmail.com/jmap/session", final)
	}
	if doc.Capabilities["urn:ietf:params:jmap:mail"] == nil {
		return "", failf("not_jmap", "%s is a JMAP server without mail: Ferry needs a mail account", final.Host)
	}
	return final.String(), nil
}

// netErr says in one line what could not be reached, and how long Ferry
// waited.
func netErr(ctx context.Context, err error, addr string, timeout time.Duration, proto string) error {
	var ne net.Error
	var dns *net.DNSError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &dns):
		return failf("offline", "%s is not a host name Ferry can find: check the address", dns.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return failf("offline", "nothing is listening at %s: check the host and port", addr)
	case certErr(err, addr) != nil:
		return certErr(err, addr)
	case (errors.As(err, &rec) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")) && proto == "JMAP":
		return failf("tls", "%s does not speak TLS: use http:// for a server on this machine, or the server's https:// address", addr)
	case errors.As(err, &rec):
		return failf("tls", "%s does not speak TLS on this port: use --security starttls (or --security none for a server on this machine), or the server's TLS port", addr)
	case proto == "JMAP" && (strings.Contains(err.Error(), "malformed HTTP") || strings.Contains(err.Error(), "HTTP/1.x transport connection broken")):
		return failf("not_jmap", "%s answers, but not over HTTP: give the JMAP session URL, e.g. https://api.fastmail.com/jmap/session", addr)
	case ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout():
		return failf("offline", "no %s answer from %s within %s: check the host and port (or give a longer --timeout)", proto, addr, timeout)
	}
	return failf("offline", "cannot reach %s: check the host and port", addr)
}

// imapProbe is an IMAP account to check.
type imapProbe struct {
	host           string
	port           int
	tls            bool // implicit TLS
	starttls       bool // STARTTLS after the greeting
	user, password string
	roots          *x509.CertPool // trusted CAs (nil: the system's)
}

func (p imapProbe) addr() string { return net.JoinHostPort(p.host, fmt.Sprint(p.port)) }

// probeIMAP connects, reads the greeting and logs in, all within timeout.
func probeIMAP(ctx context.Context, p imapProbe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", p.addr())
	if err != nil {
		return netErr(ctx, err, p.addr(), timeout, "IMAP")
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if p.tls {
		tc := tls.Client(conn, &tls.Config{ServerName: p.host, RootCAs: p.roots})
		if err := tc.HandshakeContext(ctx); err != nil {
			return netErr(ctx, err, p.addr(), timeout, "TLS")
		}
		conn = tc
	}
	if p.starttls {
		return imapStartTLS(ctx, conn, p, timeout)
	}
	return imapLogin(conn, p, timeout)
}

// imapStartTLS reads the greeting, upgrades the connection with STARTTLS
// and logs in over TLS.
func imapStartTLS(ctx context.Context, conn net.Conn, p imapProbe, timeout time.Duration) error {
	r := bufio.NewReaderSize(conn, 4096)
	greeting, err := readIMAPLine(r)
	if err != nil {
		return failf("offline", "%s sent no IMAP greeting within %s: is it an IMAP port?", p.addr(), timeout)
	}
	if !strings.HasPrefix(greeting, "* OK") {
		return failf("offline", "%s is not an IMAP server that can start TLS: check the host and port", p.addr())
	}
	fmt.Fprintf(conn, "S0 STARTTLS\r\n")
	for lines := 0; ; lines++ {
		line, err := readIMAPLine(r)
		if err != nil || lines > maxLoginLines {
			return failf("offline", "%s stopped answering STARTTLS: try again", p.addr())
		}
		if strings.HasPrefix(line, "S0 OK") {
			break
		}
		if strings.HasPrefix(line, "S0 ") {
			return failf("tls", "%s does not offer STARTTLS: use --security tls on its TLS port (993)", p.addr())
		}
	}
	if r.Buffered() > 0 {
		return failf("tls", "%s sent data before the TLS handshake: do not use this server", p.addr())
	}
	tc := tls.Client(conn, &tls.Config{ServerName: p.host, RootCAs: p.roots})
	if err := tc.HandshakeContext(ctx); err != nil {
		return netErr(ctx, err, p.addr(), timeout, "TLS")
	}
	return imapLoginAfterGreeting(tc, bufio.NewReaderSize(tc, 4096), p)
}

// imapLogin reads the greeting and logs in on an open connection, whose
// deadline bounds it.
func imapLogin(conn net.Conn, p imapProbe, timeout time.Duration) error {
	r := bufio.NewReaderSize(conn, 4096)
	greeting, err := readIMAPLine(r)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			hint := ""
			if !p.tls {
				hint = " (a TLS port such as 993 needs --security tls)"
			}
			return failf("offline", "%s accepted the connection but sent no IMAP greeting within %s: is it an IMAP port?%s", p.addr(), timeout, hint)
		}
		return failf("offline", "%s closed the connection without an IMAP greeting: is it an IMAP port?", p.addr())
	}
	switch {
	case strings.HasPrefix(greeting, "* PREAUTH"):
		return nil
	case !strings.HasPrefix(greeting, "* OK"):
		return failf("offline", "%s is not an IMAP server, or refused the connection: check the host and port", p.addr())
	case strings.Contains(strings.ToUpper(greeting), "LOGINDISABLED"):
		return failf("tls", "%s accepts a password only over TLS: use --security tls and its TLS port (993)", p.addr())
	}
	return imapLoginAfterGreeting(conn, r, p)
}

// imapLoginAfterGreeting sends LOGIN and reads its answer.
func imapLoginAfterGreeting(conn net.Conn, r *bufio.Reader, p imapProbe) error {
	if strings.ContainsAny(p.user+p.password, "\r\n\x00") {
		return usagef("the user name or password has a line break in it")
	}
	conn.SetDeadline(time.Now().Add(loginTimeout))
	fmt.Fprintf(conn, "F1 LOGIN %s %s\r\n", quoteIMAP(p.user), quoteIMAP(p.password))
	for lines := 0; ; lines++ {
		if lines > maxLoginLines {
			return failf("offline", "%s answers the login with endless untagged lines: is it an IMAP server?", p.addr())
		}
		line, err := readIMAPLine(r)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return failf("offline", "%s did not answer the login within %s (a server slows down after wrong passwords): check the password, and try again in a minute", p.addr(), loginTimeout)
		}
		if err != nil {
			return failf("offline", "%s stopped answering during the login: try again", p.addr())
		}
		switch {
		case strings.HasPrefix(line, "F1 OK"):
			fmt.Fprintf(conn, "F2 LOGOUT\r\n")
			return nil
		case strings.HasPrefix(line, "F1 "):
			return failf("auth", "%s refused this user name and password: check them and connect again", p.addr())
		}
	}
}

// readIMAPLine reads one line of at most 64 KiB.
func readIMAPLine(r *bufio.Reader) (string, error) {
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		b, err := r.ReadSlice('\n')
		sb.Write(b)
		if err == nil {
			return strings.TrimRight(sb.String(), "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	return "", errors.New("line too long")
}

func quoteIMAP(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
