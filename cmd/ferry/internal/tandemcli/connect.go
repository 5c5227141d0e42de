package tandemcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// connectFlags are the flags of the connect commands.
type connectFlags struct {
	user, passwordFile, security string
	caFile                       string
	timeout                      time.Duration
}

// Timeouts of the connect probes: the default, and the range accepted.
const (
	defaultProbeTimeout = 5 * time.Second
	minProbeTimeout     = time.Second
	maxProbeTimeout     = 2 * time.Minute
	maxDescriptor       = 64 << 10
)

func (a *app) connectCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "connect",
		GroupID: groupSetup,
		Short:   "Connect this device to the mail account its lists sync through",
		Long: `Connect the device to the mail account its lists sync through. A
dedicated account is strongly recommended. Ferry checks the address and the
credential (within --timeout) before it saves anything, then syncs once.

The password or token is never a flag's value: it is asked for on the
terminal, read from --password-file FILE (- for standard input), or taken
from the FERRY_PASSWORD environment variable.`,
		Args: args(1, -1, "connect jmap|imap|paste ..."),
		RunE: func(c *cobra.Command, as []string) error {
			return usagef("unknown way to connect %q: use ferry connect jmap, imap or paste", as[0])
		},
	}
	c.AddCommand(a.connectJMAPCmd(), a.connectIMAPCmd(), a.connectPasteCmd())
	return c
}

func (a *app) connectCommon(c *cobra.Command, f *connectFlags) {
	c.Flags().StringVar(&f.passwordFile, "password-file", "", "read the password or token from this file (- for standard input)")
	c.Flags().DurationVar(&f.timeout, "timeout", defaultProbeTimeout, "how long to wait for the server to answer (1s to 2m; its answer to the login may take up to 45s)")
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "switch to another account without asking")
	c.Flags().StringVar(&f.caFile, "ca-file", "", caFileHelp)
	a.flags(c, true)
}

func (f *connectFlags) check() error {
	if f.timeout < minProbeTimeout || f.timeout > maxProbeTimeout {
		return usagef("--timeout %s is out of range: give 1s to 2m", f.timeout)
	}
	return nil
}

func (a *app) connectJMAPCmd() *cobra.Command {
	var f connectFlags
	c := &cobra.Command{
		Use:   "jmap URL",
		Short: "Connect a JMAP account: its session URL (or just the server's address) and an API token or password",
		Long: `Connect a JMAP account. URL is the session URL (Fastmail:
https://api.fastmail.com/jmap/session), or the server's address, whose
/.well-known/jmap is asked. Without --user the secret is an API token
(Bearer); with --user it is that user's password.`,
		Example: "  ferry connect jmap https://api.fastmail.com/jmap/session\n  ferry connect jmap http://127.0.0.1:8008 --user alice --password-file pw.txt",
		Args:    args(1, 1, "connect jmap URL"),
		RunE: func(c *cobra.Command, as []string) error {
			if err := f.check(); err != nil {
				return err
			}
			u, err := jmapTarget(as[0])
			if err != nil {
				return err
			}
			what, prompt := "token", "API token for "+u.Host+": "
			if f.user != "" {
				what, prompt = "password", "Password for "+f.user+" at "+u.Host+": "
			}
			secret, err := a.readSecret(c, secretSource{what: what, file: f.passwordFile, flag: "password-file", env: "FERRY_PASSWORD", prompt: prompt})
			if err != nil {
				return err
			}
			return a.connectJMAP(c, u, f, secret)
		},
	}
	c.Flags().StringVar(&f.user, "user", "", "the account's user name (then the secret is its password, not a token)")
	a.connectCommon(c, &f)
	return c
}

func (a *app) connectJMAP(c *cobra.Command, u *url.URL, f connectFlags, secret string) error {
	auth := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) }
	if f.user != "" {
		auth = func(r *http.Request) { r.SetBasicAuth(f.user, secret) }
	}
	if err := a.useTrust(f.caFile); err != nil {
		return err
	}
	session, err := probeJMAP(c.Context(), u, auth, f.timeout, a.trust.roots())
	if err != nil {
		return err
	}
	h := tandem.JMAPHub(session, secret)
	if f.user != "" {
		h = tandem.JMAPBasicHub(session, f.user, secret)
	}
	return a.saveHub(c, h, f.caFile != "")
}

func (a *app) connectIMAPCmd() *cobra.Command {
	var f connectFlags
	c := &cobra.Command{
		Use:   "imap HOST[:PORT]",
		Short: "Connect an IMAP account: host, user and (app) password",
		Long: `Connect an IMAP account. PORT is 993 (implicit TLS) unless given; for
STARTTLS give --security starttls and the port (usually 143); a server on
this machine without TLS needs --security none.`,
		Example: "  ferry connect imap imap.example.com --user me@example.com\n  ferry connect imap 127.0.0.1:1143 --user alice --security none --password-file pw.txt",
		Args:    args(1, 1, "connect imap HOST[:PORT] --user USER"),
		RunE: func(c *cobra.Command, as []string) error {
			if err := f.check(); err != nil {
				return err
			}
			p, err := imapAddress(as[0], f)
			if err != nil {
				return err
			}
			if p.password, err = a.readSecret(c, secretSource{what: "password", file: f.passwordFile, flag: "password-file", env: "FERRY_PASSWORD", prompt: "Password for " + p.user + " at " + p.host + ": "}); err != nil {
				return err
			}
			if err := a.useTrust(f.caFile); err != nil {
				return err
			}
			p.roots = a.trust.roots()
			if err := probeIMAP(c.Context(), p, f.timeout); err != nil {
				return err
			}
			return a.saveHub(c, tandem.IMAPHub(p.host, p.port, p.user, p.password).WithSecurity(f.security), f.caFile != "")
		},
	}
	c.Flags().StringVar(&f.user, "user", "", "the account's user name (required)")
	c.Flags().StringVar(&f.security, "security", "tls", "transport security: tls (implicit TLS), starttls, or none (only for a server on this machine)")
	a.connectCommon(c, &f)
	return c
}

// imapAddress reads HOST[:PORT] and the flags.
func imapAddress(arg string, f connectFlags) (imapProbe, error) {
	p := imapProbe{host: arg, port: 993, user: f.user}
	if h, port, err := net.SplitHostPort(arg); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return p, usagef("port %q is out of range: give 1 to 65535", port)
		}
		p.host, p.port = h, n
	}
	if p.host == "" || strings.ContainsAny(p.host, "/ ") {
		return p, usagef("%q is not a host name: give HOST or HOST:PORT", arg)
	}
	switch f.security {
	case "tls":
		p.tls = true
	case "none":
	case "starttls":
		p.starttls = true
		if p.port == 993 {
			return p, usagef("port 993 is implicit TLS: use --security tls there, starttls on port 143")
		}
	default:
		return p, usagef("--security %q: use tls, starttls or none", f.security)
	}
	if f.user == "" {
		return p, usagef("give the account's user name: --user USER")
	}
	return p, nil
}

func (a *app) connectPasteCmd() *cobra.Command {
	var f connectFlags
	c := &cobra.Command{
		Use:   "paste [FILE]",
		Short: "Connect the account another device shows with ferry hub qr (its text, from FILE or standard input)",
		Args:  args(0, 1, "connect paste [FILE]"),
		RunE: func(c *cobra.Command, as []string) error {
			if err := f.check(); err != nil {
				return err
			}
			path := "-"
			if len(as) == 1 {
				path = as[0]
			}
			h, d, err := readDescriptor(c.InOrStdin(), path)
			if err != nil {
				return err
			}
			if err := a.useTrust(f.caFile); err != nil {
				return err
			}
			switch h.Kind() {
			case "jmap":
				u, err := url.Parse(d.Session)
				if err != nil {
					return failf("invalid", "the hub's session URL is not a URL")
				}
				auth := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+d.Token) }
				if d.User != "" {
					auth = func(r *http.Request) { r.SetBasicAuth(d.User, d.Password) }
				}
				if _, err := probeJMAP(c.Context(), u, auth, f.timeout, a.trust.roots()); err != nil {
					return err
				}
			case "imap":
				p := imapProbe{host: d.Host, port: d.Port, tls: d.Security == "tls", starttls: d.Security == "starttls", user: d.User, password: d.Password, roots: a.trust.roots()}
				if err := probeIMAP(c.Context(), p, f.timeout); err != nil {
					return err
				}
			}
			return a.saveHub(c, h, f.caFile != "")
		},
	}
	c.Flags().DurationVar(&f.timeout, "timeout", defaultProbeTimeout, "how long to wait for the server to answer (1s to 2m; its answer to the login may take up to 45s)")
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "switch to another account without asking")
	c.Flags().StringVar(&f.caFile, "ca-file", "", caFileHelp)
	return a.flags(c, true)
}

// descriptor is the §13.1 hub descriptor's fields, as MarshalJSON writes them.
type descriptor struct {
	Kind     string `json:"kind"`
	Session  string `json:"session"`
	Token    string `json:"token"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Password string `json:"password"`
	Security string `json:"security"`
}

// readDescriptor reads a hub descriptor's text.
func readDescriptor(stdin io.Reader, path string) (tandem.Hub, descriptor, error) {
	var d descriptor
	var b []byte
	if path == "-" { // one line: a person pastes it and presses Enter
		if isTerminal(stdin) {
			fmt.Fprint(os.Stderr, "Paste the text ferry hub qr shows, then Enter: ")
		}
		b = []byte(readLine(stdin, maxDescriptor+1))
	} else {
		f, err := os.Open(path)
		if err != nil {
			return tandem.Hub{}, d, failf("invalid", "cannot read %s: %v", path, pathErr(err))
		}
		defer f.Close()
		if b, err = io.ReadAll(io.LimitReader(f, maxDescriptor+1)); err != nil {
			return tandem.Hub{}, d, failf("invalid", "cannot read %s: %v", path, err)
		}
	}
	if len(b) > maxDescriptor {
		return tandem.Hub{}, d, failf("invalid", "this is not the text ferry hub qr shows (it is too long): paste the whole line it printed")
	}
	h, err := tandem.ParseHub([]byte(strings.TrimSpace(string(b))))
	var te *tandem.Error
	switch {
	case errors.As(err, &te) && tandem.CodeOf(err) == tandem.CodeInvalid && te.Message == "this is not a hub description":
		return tandem.Hub{}, d, failf("invalid", "this is not the text ferry hub qr shows: paste the whole line it printed")
	case err != nil:
		return tandem.Hub{}, d, err
	}
	hb, _ := h.MarshalJSON()
	json.Unmarshal(hb, &d)
	return h, d, nil
}

// saveHub saves the checked hub in the device (and the CA file given to
// connect, when keepCA) and syncs once.
func (a *app) saveHub(c *cobra.Command, h tandem.Hub, keepCA bool) error {
	s, err := a.open(c.Context())
	if err != nil {
		return err
	}
	defer s.close()
	if old := s.dev.Hub(); !old.IsZero() && !old.Same(h) {
		if !a.confirm(c, fmt.Sprintf("This device syncs through %s. Switch to %s? Lists only there stop syncing here.", old, h)) {
			return failf("declined", "still connected to %s (answer y to switch)", old)
		}
	}
	if keepCA {
		if err := keepTrust(s.dir, a.trust); err != nil {
			return err
		}
	}
	if err := s.dev.SetHub(c.Context(), h); err != nil {
		return err
	}
	rep, serr := a.syncOnce(c.Context(), s, syncTimeout)
	if a.json {
		out := map[string]any{"hub": h.String(), "kind": h.Kind(), "synced": serr == nil, "sync": reportJSON(rep)}
		if err := emit(c.OutOrStdout(), out); err != nil {
			return err
		}
		return serr
	}
	fmt.Fprintf(c.OutOrStdout(), "Connected to %s. %s\n", h, accountAdvice(h))
	if serr != nil {
		return serr
	}
	fmt.Fprintf(c.OutOrStdout(), "Synced: %s.\n", describeReport(rep))
	return nil
}

// accountAdvice is §13.1's advice for whoever connects a hub.
func accountAdvice(h tandem.Hub) string {
	return "Everyone you invite gets access to this account's mailbox; a dedicated account is best."
}
