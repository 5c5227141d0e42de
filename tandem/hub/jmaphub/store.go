package jmaphub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// DefaultPollInterval is how often Watch polls Email/changes when the server
// offers no EventSource push. Decision: docs/decisions/tandem-hub-jmap-polling.md.
const DefaultPollInterval = 5 * time.Second

// Config says how to reach a JMAP account.
type Config struct {
	// SessionURL is the JMAP session resource, e.g.
	// https://jmap.example.com/.well-known/jmap (RFC 8620 §2.2).
	SessionURL string
	// Username and Password are sent with HTTP Basic authentication on
	// every request when either is set.
	Username, Password string
	// HTTPClient makes the requests; nil means a client of the store's own
	// (closed by Close) with no overall timeout: Watch holds a request
	// open, and every call has a context.
	HTTPClient *http.Client
	// PollInterval is the Watch polling interval for servers without
	// EventSource push; zero means DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives debug and warning records; nil means slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds every request (the session, an API call, a
	// download, a poll, the wait for an event stream's first answer):
	// zero means DefaultRequestTimeout. A request that gets no whole
	// answer in time fails with hub.ErrUnavailable.
	RequestTimeout time.Duration
	// Budget bounds logins (session fetches) and appends
	// (docs/hub-providers.md); share one among a device's Stores. nil
	// means a budget of the Store's own with hub.DefaultRates.
	Budget *hub.RateBudget
}

// DefaultRequestTimeout is the default Config.RequestTimeout. A silent
// server or path is noticed within it (a poll, an API call), or within two
// ping intervals on an open event stream
// (docs/decisions/tandem-hub-jmap-polling.md).
const DefaultRequestTimeout = 60 * time.Second

func (cfg *Config) requestTimeout() time.Duration {
	if cfg.RequestTimeout > 0 {
		return cfg.RequestTimeout
	}
	return DefaultRequestTimeout
}

// Store is the JMAP binding of the hub store (§10.2). It implements
// hub.Store. It is safe for concurrent use.
type Store struct {
	c   client
	s   *session
	log *slog.Logger

	ownHTTP bool // the http.Client is the store's own: Close closes its connections

	mu      sync.Mutex
	mailbox string // the Tandem mailbox id, once known
	closed  bool
	stop    context.CancelFunc // ends Watch calls on Close
	done    context.Context
}

var _ hub.Store = (*Store)(nil)

// Open fetches the session resource (RFC 8620 §2) and returns a Store for
// the account's primary mail account. It does not touch the mailbox: call
// EnsureFolder.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.SessionURL == "" {
		return nil, errors.New("jmaphub: Config.SessionURL is empty")
	}
	hc, own := cfg.HTTPClient, false
	if hc == nil {
		hc, own = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, true
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Budget == nil {
		cfg.Budget = hub.NewDefaultRateBudget()
	}
	if err := cfg.Budget.Login(); err != nil {
		return nil, fmt.Errorf("jmaphub: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	st := &Store{c: client{cfg: cfg, http: hc}, ownHTTP: own, log: log.With("hub", "jmap")}
	s, err := st.c.fetchSession(ctx)
	if err != nil {
		if own {
			hc.CloseIdleConnections()
		}
		return nil, err
	}
	st.s = s
	st.done, st.stop = context.WithCancel(context.Background())
	return st, nil
}

// Close ends Watch calls in progress and closes the store's idle
// connections; later calls fail with hub.ErrClosed.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	st.stop()
	if st.ownHTTP {
		st.c.http.CloseIdleConnections()
	}
	return nil
}

// AccountID returns the JMAP account the store works in.
func (st *Store) accountID() string { return st.s.accountID }

// check fails with hub.ErrClosed after Close.
func (st *Store) check() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return hub.ErrClosed
	}
	return nil
}

// request runs method calls after checking that the store is open.
func (st *Store) request(ctx context.Context, calls ...call) error {
	if err := st.check(); err != nil {
		return err
	}
	return st.c.request(ctx, st.s, calls...)
}

// batches splits n items into consecutive [lo, hi) ranges of at most size.
func batches(n, size int) [][2]int {
	var out [][2]int
	for lo := 0; lo < n; lo += size {
		out = append(out, [2]int{lo, min(lo+size, n)})
	}
	return out
}

func wrapOp(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("jmaphub: %s: %w", op, err)
}
