package imaphub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/internal/retry"
)

// Config says how to reach the account.
type Config struct {
	Addr     string // host:port
	User     string
	Password string
	// Security is how the connection is protected (§10.3: LOGIN over
	// TLS). The zero value, Plaintext, is for test servers on a loopback
	// address only; Open refuses it for any other host.
	Security Security
	// TLS configures TLS for ImplicitTLS and StartTLS; nil means the
	// system roots and the host of Addr as the server name. For
	// compatibility, a TLS config with Security Plaintext means
	// ImplicitTLS.
	TLS *tls.Config
	// TLSInsecure skips the verification of the server's certificate.
	// For test servers with a self-signed certificate only; never set it
	// for a real provider (it is never the default).
	TLSInsecure bool
	// DisableQRESYNC makes the binding act as if the server lacked
	// QRESYNC, using the UID SEARCH ALL comparison for removals.
	DisableQRESYNC bool
	// IdleRefresh is how often Watch ends IDLE, checks that its folder is
	// still there (and the same), and idles again; zero means
	// DefaultIdleRefresh. A silent connection is noticed at the latest
	// IdleRefresh + ReplyTimeout after it went silent.
	IdleRefresh time.Duration
	// ReplyTimeout bounds every wait for the server: no read or write
	// may stall longer (zero: DefaultReplyTimeout).
	ReplyTimeout time.Duration
	// Dialer, when set, replaces net.Dialer (tests use it).
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Budget bounds logins and appends (docs/hub-providers.md); share one
	// among a device's Stores. nil means a budget of the Store's own with
	// hub.DefaultRates.
	Budget *hub.RateBudget
}

// Security says how a connection is protected.
type Security int

const (
	// Plaintext is no TLS: loopback test servers only.
	Plaintext Security = iota
	// ImplicitTLS is TLS from the first byte (port 993, RFC 8314).
	ImplicitTLS
	// StartTLS upgrades a plaintext connection with STARTTLS before
	// logging in (port 143, RFC 9051 §6.2.1); a server that does not
	// offer it is refused.
	StartTLS
)

// DefaultIdleRefresh is Watch's default IDLE period: well inside RFC
// 2177's 29 minutes, and short enough that a connection that went silent
// (a NAT mapping dropped, a server stuck, a folder deleted under a server
// that says nothing) is noticed within about 4.5 minutes
// (docs/decisions/tandem-hub-imap-watch-deadlines.md).
const DefaultIdleRefresh = 4 * time.Minute

func (cfg *Config) security() Security {
	if cfg.Security == Plaintext && cfg.TLS != nil {
		return ImplicitTLS
	}
	return cfg.Security
}

func (cfg *Config) replyTimeout() time.Duration {
	if cfg.ReplyTimeout > 0 {
		return cfg.ReplyTimeout
	}
	return DefaultReplyTimeout
}

// tlsConfig is the TLS configuration for Addr.
func (cfg *Config) tlsConfig() *tls.Config {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tc = cfg.TLS.Clone()
	}
	if tc.ServerName == "" {
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			host = cfg.Addr
		}
		tc.ServerName = host
	}
	if cfg.TLSInsecure {
		tc.InsecureSkipVerify = true
	}
	return tc
}

// checkPlaintext refuses Plaintext to anything but a loopback address.
func (cfg *Config) checkPlaintext() error {
	if cfg.security() != Plaintext {
		return nil
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host = cfg.Addr
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("imaphub: %s: %w", cfg.Addr, ErrPlaintext)
}

// ErrPlaintext means a Config asks for a plaintext connection to a host
// that is not a loopback address: set Security to ImplicitTLS or StartTLS.
var ErrPlaintext = errors.New("plaintext login is only allowed to a loopback test server: use TLS (Security: ImplicitTLS on port 993, or StartTLS on port 143)")

// dialTCP connects (without TLS) within the reply timeout.
func (cfg *Config) dialTCP(ctx context.Context) (net.Conn, error) {
	d := cfg.Dialer
	if d == nil {
		d = (&net.Dialer{Timeout: cfg.replyTimeout()}).DialContext
	}
	return d(ctx, "tcp", cfg.Addr)
}

func (cfg *Config) idleRefresh() time.Duration {
	if cfg.IdleRefresh > 0 {
		return cfg.IdleRefresh
	}
	return DefaultIdleRefresh
}

// Store is the IMAP binding of the hub store. It implements hub.Store over
// one command connection (re-dialled after a failure) plus one connection
// per Watch call.
type Store struct {
	cfg Config

	mu       sync.Mutex // serializes commands on c
	c        *conn
	live     atomic.Pointer[conn] // c, for Close to interrupt without mu
	mailbox  string               // <namespace prefix>Tandem, found at the first connect
	identity [16]byte             // folderIdentity of the account's mailbox
	closed   bool
	watches  map[*conn]struct{}
	headers  headerCache  // what Changes read for Fetch; s.mu
	retry    retry.Policy // for answers that the server failed for now
}

var _ hub.Store = (*Store)(nil)

// Open connects to the account and logs in.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Budget == nil {
		cfg.Budget = hub.NewDefaultRateBudget()
	}
	s := &Store{cfg: cfg, watches: map[*conn]struct{}{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.retry.Do(ctx, isTransient, func() error {
		_, err := s.conn(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// conn returns the command connection, dialling a new one if the last broke.
// s.mu is held.
func (s *Store) conn(ctx context.Context) (*conn, error) {
	if s.closed {
		return nil, hub.ErrClosed
	}
	if s.c != nil && s.c.broken == nil {
		return s.c, nil
	}
	if s.c != nil {
		s.c.close()
		s.c = nil
	}
	c, err := s.login(ctx)
	if err != nil {
		return nil, err
	}
	s.live.Store(c)
	if s.mailbox == "" {
		if s.mailbox, err = c.folderName(ctx); err != nil {
			c.close()
			return nil, err
		}
		s.identity = folderIdentity(s.cfg.Addr, s.cfg.User, s.mailbox)
	}
	s.c = c
	return c, nil
}

// login dials a new connection, within the login budget.
func (s *Store) login(ctx context.Context) (*conn, error) {
	if err := s.cfg.Budget.Login(); err != nil {
		return nil, fmt.Errorf("imaphub: %s: %w", s.cfg.Addr, err)
	}
	return dial(ctx, &s.cfg)
}

// run calls op with the command connection; s.mu is held. A connection
// that served earlier calls may have been closed by the server since
// (Dovecot logs out clients idle for 30 minutes): if op fails because the
// connection is gone, and that connection was not dialled for this call,
// op runs once more on a fresh one. An answer that the server failed for
// now (NO [SERVERBUG], ...) runs op again after a pause, within ctx
// (retry.Policy). Only idempotent operations use run.
//
// The third try runs on a fresh connection: a server that failed twice on
// one connection may be failing on that connection's state (Dovecot
// answers NO [SERVERBUG] on a connection whose selected folder another
// client renamed). That is one login more at most (hub.RateBudget), unless
// the server refuses logins for now too.
func (s *Store) run(ctx context.Context, op func(*conn) error) error {
	tries := 0
	return s.retry.Do(ctx, isTransient, func() error {
		if tries++; tries == 3 && s.c != nil {
			s.c.close()
			s.c = nil
		}
		return s.runOnce(ctx, op)
	})
}

// runOnce is one try of run.
func (s *Store) runOnce(ctx context.Context, op func(*conn) error) error {
	reused := s.c != nil && s.c.broken == nil
	c, err := s.conn(ctx)
	if err != nil {
		return err
	}
	err = op(c)
	if err != nil && reused && c.gone && ctx.Err() == nil {
		if c, err2 := s.conn(ctx); err2 == nil {
			return op(c)
		}
	}
	return err
}

// folderName is <prefix>Tandem, where prefix is the personal namespace's
// (NAMESPACE, RFC 2342; §10.3).
func (c *conn) folderName(ctx context.Context) (string, error) {
	if !c.caps["NAMESPACE"] {
		return hub.Folder, nil
	}
	prefix := ""
	err := c.cmd(ctx, "namespace", "NAMESPACE", func(r *response) error {
		if r.name != "NAMESPACE" || len(r.args) == 0 {
			return nil
		}
		personal, ok := r.args[0].([]any) // (("prefix" "sep") ...) or NIL
		if !ok || len(personal) == 0 {
			return nil
		}
		first, ok := personal[0].([]any)
		if !ok || len(first) < 1 {
			return &hub.ProtocolError{Op: "namespace", Msg: "malformed NAMESPACE response"}
		}
		prefix, _ = str(first[0])
		return nil
	})
	return prefix + hub.Folder, err
}

// EnsureFolder implements hub.Store: LIST "" <mailbox>, then CREATE if
// missing; ALREADYEXISTS is success (§10.3).
func (s *Store) EnsureFolder(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run(ctx, func(c *conn) error { return c.ensureFolder(ctx, s.mailbox) })
}

func (c *conn) ensureFolder(ctx context.Context, mailbox string) error {
	exists, err := c.listed(ctx, mailbox)
	if err != nil || exists {
		return err
	}
	err = c.cmd(ctx, "create", "CREATE "+quote(mailbox), nil)
	if se, no := refusal(err); no {
		if se.hasCode("ALREADYEXISTS") {
			return nil
		}
		// Servers without the code: it exists if it is listed now.
		if ok, lerr := c.listed(ctx, mailbox); lerr == nil && ok {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("imaphub: create %s: %w", mailbox, err)
	}
	return nil
}

func (c *conn) listed(ctx context.Context, mailbox string) (bool, error) {
	found := false
	err := c.cmd(ctx, "list", "LIST \"\" "+quote(mailbox), func(r *response) error {
		if r.name == "LIST" && len(r.args) >= 3 {
			if name, ok := str(r.args[2]); ok && name == mailbox {
				found = true
			}
		}
		return nil
	})
	return found, err
}

// Close implements hub.Store. A call in progress is interrupted: it
// returns an error.
func (s *Store) Close() error {
	if c := s.live.Load(); c != nil {
		c.interrupt()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for w := range s.watches {
		w.close()
	}
	if s.c != nil {
		return s.c.close() // no LOGOUT: closing the connection ends the session
	}
	return nil
}
